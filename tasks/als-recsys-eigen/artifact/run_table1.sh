#!/bin/sh
# Rebuild and regenerate Table 1 -> results/table1.csv
set -e
make als
mkdir -p results
./als configs/table1.cfg
