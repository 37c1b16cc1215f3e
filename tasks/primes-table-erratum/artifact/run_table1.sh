#!/bin/bash
# Table 1 of the paper: prime counts for x = 10^3 .. 10^7.
set -euo pipefail
cd "$(dirname "$0")"
make -s primecount
mkdir -p results
{
    echo "x,count"
    for x in 1000 10000 100000 1000000 10000000; do
        ./primecount "$x"
    done
} > results/table1.csv
cat results/table1.csv
