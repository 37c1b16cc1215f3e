#!/usr/bin/env Rscript
## Reproduces Table 3 of
##   "Sparse logistic regression holds its own: lasso vs. random forests
##    for diabetes screening on the Pima data"
##
## usage:  Rscript run_study.R [train.csv [test.csv [seed [outdir]]]]
## defaults: data/pima_train.csv data/pima_test.csv 2016 results

suppressMessages({
  library(Matrix)
  library(glmnet)
  library(randomForest)
  library(rpart)
})
source("R/utils.R")
source("R/models.R")

args <- commandArgs(trailingOnly = TRUE)
train.file <- if (length(args) >= 1) args[1] else "data/pima_train.csv"
test.file  <- if (length(args) >= 2) args[2] else "data/pima_test.csv"
seed       <- if (length(args) >= 3) as.integer(args[3]) else 2016
outdir     <- if (length(args) >= 4) args[4] else "results"

train <- read.csv(train.file)
test  <- read.csv(test.file)
cat(sprintf("train: %d cases (%d diabetic), test: %d cases\n",
            nrow(train), sum(train$type == "Yes"), nrow(test)))

lasso <- fit.lasso(train, test, seed)
tab <- rbind(fit.logistic(train, test),
             lasso$table,
             fit.tree(train, test, seed))
rf <- fit.forest(train, test, seed)
tab$top_var <- NA
tab <- rbind(tab, rf)

dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
write.csv(tab, file.path(outdir, "table3.csv"), row.names = FALSE)
write.csv(as.matrix(lasso$coefs), file.path(outdir, "lasso_coefs.csv"))

print(tab, digits = 4, row.names = FALSE)
cat("wrote", file.path(outdir, "table3.csv"), "\n")
