## utils.R -- helpers for the Pima study
## (c) 2016 the authors; GPL-2

## numeric design matrix (no intercept) from a data frame
design <- function(df, response = "type") {
  X <- as.matrix(df[, setdiff(names(df), response)])
  if (class(X) != "matrix")
    stop("design(): could not build a numeric matrix")
  storage.mode(X) <- "double"
  X
}

## 0/1 outcome: 1 for the second level ("Yes")
outcome <- function(df, response = "type") {
  y <- df[[response]]
  as.numeric(y == levels(y)[2])
}

## area under the ROC curve (Mann-Whitney form, ties get mid-ranks)
auc <- function(y, p) {
  r <- rank(p)
  n1 <- sum(y == 1); n0 <- sum(y == 0)
  (sum(r[y == 1]) - n1 * (n1 + 1) / 2) / (n1 * n0)
}

logloss <- function(y, p, eps = 1e-15) {
  p <- pmin(pmax(p, eps), 1 - eps)
  -mean(y * log(p) + (1 - y) * log(1 - p))
}

accuracy <- function(y, p, cut = 0.5) mean((p > cut) == (y == 1))

row.of <- function(model, y, p, n.vars, tuning) {
  data.frame(model = model,
             test_acc = accuracy(y, p),
             test_auc = auc(y, p),
             test_logloss = logloss(y, p),
             n_vars = n.vars,
             tuning = tuning)
}
