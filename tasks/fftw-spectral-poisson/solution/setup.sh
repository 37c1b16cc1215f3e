#!/bin/bash
# Reference deployment for fftw-spectral-poisson.
# Snags:
#  - the Makefile targets Intel C 8.1 on a Pentium 4 cluster (CC = icc,
#    -xW -ip) with FFTW in /usr/local/fftw-3.0.1; its commented gcc line uses
#    -march=pentium4, which x86-64 gcc rejects ("CPU you selected does not
#    support x86-64 instruction set").
#  - specpois.h *defines* the global run parameters and work arrays (no
#    extern), and is included by five files: fine with icc / gcc < 10
#    (common symbols), "multiple definition of `Lbox'" with gcc >= 10
#    (-fno-common).  -fcommon restores the old behaviour (or move the
#    definitions to one .c file).
#  - FFTW 3 from Debian (libfftw3-dev).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends gcc make libc6-dev libfftw3-dev

cd /workspace/artifact
sed -i -e 's/^CC *=.*/CC      = gcc/' \
       -e 's/^CFLAGS *=.*/CFLAGS  = -O2 -fcommon/' \
       -e 's/^FFTWDIR *=.*/FFTWDIR = \/usr/' Makefile
make clean
make
sh run_tables.sh
