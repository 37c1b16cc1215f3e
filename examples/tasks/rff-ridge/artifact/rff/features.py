import numpy as np
from scipy.linalg import solve


class RandomFourierFeatures(object):
    """Rahimi-Recht features for the Gaussian kernel with bandwidth sigma.

    z(x) = sqrt(2/D) cos(W^T x + b),  W ~ N(0, sigma^-2 I),  b ~ U[0, 2 pi)
    so that E[z(x)^T z(y)] = exp(-|x - y|^2 / (2 sigma^2)).
    """

    def __init__(self, n_features, sigma, random_state=None):
        self.n_features = n_features
        self.sigma = sigma
        if isinstance(random_state, np.random.RandomState):
            self.rng = random_state
        else:
            self.rng = np.random.RandomState(random_state)

    def fit(self, X):
        d = X.shape[1]
        self.W_ = self.rng.normal(scale=1.0 / self.sigma, size=(d, self.n_features))
        self.b_ = self.rng.uniform(0.0, 2 * np.pi, size=self.n_features)
        return self

    def transform(self, X):
        Z = np.cos(X.dot(self.W_) + self.b_)
        return np.sqrt(2.0 / self.n_features) * Z.astype(np.float)


def ridge_fit(Z, y, lam):
    """Primal ridge regression on features: (Z^T Z + n lam I) w = Z^T y."""
    n, D = Z.shape
    A = Z.T.dot(Z)
    A[np.diag_indices(D)] += n * lam
    return solve(A, Z.T.dot(y), sym_pos=True)
