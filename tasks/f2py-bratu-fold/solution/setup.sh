#!/bin/bash
# Reference deployment for f2py-bratu-fold.
# Snags:
#  - gfortran >= 10 rejects the scalar actual arguments to the rank-1 dummies
#    of VCOPY in src/bratu.f ("Rank mismatch in argument 'x'") -> fix the two
#    calls (plain assignments). setup.py is protected (the verifier rebuilds
#    with it), so -fallow-argument-mismatch would have to come from setup.cfg
#    or FFLAGS instead.
#  - setup.py uses numpy.distutils: needs numpy < 2 on Python 3.11 (Debian's
#    python3-numpy 1.24 is fine) plus gfortran, LAPACK/BLAS and the Python
#    headers.
#  - the Python side is Python 2: print statements, implicit relative
#    imports (`from _bratu import ...` inside the package), np.float (gone in
#    numpy 1.24) and an integer division used as an index ((N + 1) / 2),
#    which 2to3 does not fix.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends gcc gfortran liblapack-dev libblas-dev \
    python3-dev python3-numpy python3-setuptools 2to3

cd /workspace/artifact

# Fortran: the two scalar copies through VCOPY become assignments
sed -i -e 's/CALL VCOPY(1, XLAM, XLAM0)/XLAM0 = XLAM/' \
       -e 's/CALL VCOPY(1, XLAM0, XLAM)/XLAM = XLAM0/' src/bratu.f

# Python 2 -> 3
2to3 -w -n bratu_tables.py bratu/__init__.py bratu/continuation.py >/dev/null
sed -i -e 's/^from _bratu import/from ._bratu import/' \
       -e 's/^from continuation import/from .continuation import/' bratu/__init__.py
sed -i -e 's/^from _bratu import/from ._bratu import/' \
       -e 's/dtype=np\.float)/dtype=float)/' \
       -e 's|mid = (N + 1) / 2|mid = (N + 1) // 2|' bratu/continuation.py

rm -rf build
python3 setup.py build_ext --inplace
python3 bratu_tables.py configs/paper.json
