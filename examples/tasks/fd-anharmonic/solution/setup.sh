#!/bin/bash
# Reference deployment for fd-anharmonic.
# Snags: the Makefile asks for g77 (gone since GCC 4), and gfortran >= 10
# rejects the scalar/array argument mismatch in the calls to DZERO.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends gfortran make liblapack-dev

cd /workspace/artifact
sed -i -e 's/^FC *=.*/FC     = gfortran/' \
       -e 's/^FFLAGS *=.*/FFLAGS = -O2 -std=legacy -fallow-argument-mismatch/' Makefile
make clean
make
bash run_table1.sh
