#!/bin/bash
# Table 2 of the paper: the periods of four generators from seed 1.
set -euo pipefail
cd "$(dirname "$0")"
make -s lcgperiod
mkdir -p results
{
    echo "generator,m,a,c,seed,period"
    while read -r name m a c; do
        echo "$name,$(./lcgperiod "$m" "$a" "$c" 1)"
    done <<TABLE
full-16 65536 75 74
half-16 65536 77 0
full-12 4096 1229 1
prime-101 101 2 0
TABLE
} > results/table2.csv
cat results/table2.csv
