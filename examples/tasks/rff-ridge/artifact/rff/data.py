import numpy as np


def target(X):
    return (np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2]
            + 0.5 * np.cos(2 * X[:, 3]) - X[:, 4] ** 2)


def make_regression(n, noise, rng):
    """The 5-d synthetic regression problem of Section 4 (x ~ U[-1,1]^5)."""
    X = rng.uniform(-1.0, 1.0, size=(n, 5))
    y = target(X) + noise * rng.randn(n)
    return X, y
