#!/bin/bash
# Reference deployment for pima-lasso-forest.
# Snags:
#  - the README installs from CRAN, which is unreachable: use Debian's
#    r-cran-* packages.
#  - read.csv() no longer makes factors (R 4.0: stringsAsFactors = FALSE), so
#    `type` is character: glm(binomial) fails with "y values must be
#    0 <= y <= 1" and levels(y) is NULL.
#  - `if (class(X) != "matrix")`: a matrix has class c("matrix", "array")
#    since R 4.0, and R 4.2 makes a length-2 if() condition an error.
#  - Matrix::cBind is defunct (Matrix >= 1.3): use cbind.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends r-base-core r-cran-matrix \
    r-cran-glmnet r-cran-randomforest r-cran-rpart

cd /workspace/artifact
sed -i 's/^train <- read\.csv(train\.file)$/train <- read.csv(train.file, stringsAsFactors = TRUE)/; s/^test  <- read\.csv(test\.file)$/test  <- read.csv(test.file, stringsAsFactors = TRUE)/' run_study.R
sed -i 's/if (class(X) != "matrix")/if (!is.matrix(X))/' R/utils.R
sed -i 's/coefs <- cBind(/coefs <- cbind(/' R/models.R

bash -lc 'cd /workspace/artifact && Rscript run_study.R'
