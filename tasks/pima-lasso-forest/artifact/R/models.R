## models.R -- the four classifiers of Table 3

fit.logistic <- function(train, test) {
  fit <- glm(type ~ ., family = binomial, data = train)
  p <- predict(fit, newdata = test, type = "response")
  row.of("logistic", outcome(test), p, length(coef(fit)) - 1, NA)
}

## L1-penalised logistic regression; folds are drawn once from the seed so
## that lambda.min / lambda.1se are reproducible
fit.lasso <- function(train, test, seed, nfolds = 10) {
  X <- design(train); Xt <- design(test)
  y <- outcome(train)
  set.seed(seed)
  foldid <- sample(rep(seq_len(nfolds), length.out = nrow(X)))
  cvfit <- cv.glmnet(X, y, family = "binomial", foldid = foldid,
                     type.measure = "deviance")
  coefs <- cBind(coef(cvfit, s = "lambda.min"), coef(cvfit, s = "lambda.1se"))
  colnames(coefs) <- c("lambda.min", "lambda.1se")
  rows <- NULL
  for (s in c("lambda.min", "lambda.1se")) {
    p <- as.vector(predict(cvfit, newx = Xt, s = s, type = "response"))
    nz <- sum(coefs[-1, s] != 0)
    rows <- rbind(rows, row.of(paste0("lasso_", sub("lambda.", "", s)),
                               outcome(test), p, nz, cvfit[[s]]))
  }
  list(table = rows, coefs = coefs)
}

## CART, pruned at the cp with the smallest cross-validated error
fit.tree <- function(train, test, seed) {
  set.seed(seed)
  tree <- rpart(type ~ ., data = train, method = "class",
                control = rpart.control(cp = 0.001, xval = 10))
  cpt <- tree$cptable
  cp.best <- cpt[which.min(cpt[, "xerror"]), "CP"]
  pruned <- prune(tree, cp = cp.best)
  p <- predict(pruned, newdata = test, type = "prob")[, 2]
  used <- setdiff(unique(as.character(pruned$frame$var)), "<leaf>")
  row.of("cart", outcome(test), p, length(used), cp.best)
}

fit.forest <- function(train, test, seed, ntree = 500) {
  set.seed(seed)
  rf <- randomForest(type ~ ., data = train, ntree = ntree, importance = TRUE)
  p <- predict(rf, newdata = test, type = "prob")[, 2]
  oob <- rf$err.rate[ntree, "OOB"]
  imp <- importance(rf, type = 2)[, 1]
  r <- row.of("random_forest", outcome(test), p, ncol(train) - 1, oob)
  r$top_var <- names(which.max(imp))
  r
}
