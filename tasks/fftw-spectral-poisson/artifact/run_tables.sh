#!/bin/sh
# Tables 1 and 2 of the paper:
#   results/paper_poisson.csv   (Table 1, Poisson: spectral vs. FD2)
#   results/paper_heat.csv      (Table 2, heat equation: BE vs. CN)
set -e
cd `dirname $0`
make specpois
mkdir -p results
./specpois input/paper.par results/paper
