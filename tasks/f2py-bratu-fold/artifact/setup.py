#!/usr/bin/env python
# Build the Fortran core with f2py:
#     python setup.py build_ext --inplace
from numpy.distutils.core import setup, Extension

ext = Extension(name='bratu._bratu',
                sources=['src/bratu.f'],
                libraries=['lapack', 'blas'])

setup(name='bratu',
      version='0.3',
      description='Finite-difference continuation of the Bratu problem',
      author='M. Kessler',
      packages=['bratu'],
      ext_modules=[ext])
