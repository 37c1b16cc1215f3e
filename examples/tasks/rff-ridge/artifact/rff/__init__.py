"""rff: random Fourier features for Gaussian-kernel ridge regression."""
from .kernels import gaussian_kernel, kernel_ridge_fit, kernel_ridge_predict
from .features import RandomFourierFeatures, ridge_fit
from .data import make_regression

__version__ = "0.3.1"
