import numpy as np
from scipy.linalg import solve
from scipy.spatial.distance import cdist


def gaussian_kernel(X, Y, sigma):
    """k(x, y) = exp(-|x - y|^2 / (2 sigma^2))"""
    d2 = cdist(X, Y, 'sqeuclidean')
    return np.exp(-d2 / (2.0 * sigma ** 2)).astype(np.float)


def kernel_ridge_fit(X, y, sigma, lam):
    """Exact kernel ridge regression: alpha = (K + n lam I)^-1 y."""
    n = X.shape[0]
    K = gaussian_kernel(X, X, sigma)
    K[np.diag_indices(n)] += n * lam
    return solve(K, y, sym_pos=True)


def kernel_ridge_predict(Xtrain, alpha, Xtest, sigma):
    return gaussian_kernel(Xtest, Xtrain, sigma).dot(alpha)
