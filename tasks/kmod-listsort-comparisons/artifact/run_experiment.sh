#!/bin/bash
# Table 2: comparisons of list_sort() for N = 10^3 .. 10^6.
# Needs the lsbench module loaded (see README).
set -eu
cd "$(dirname "$0")"
if [ ! -w /proc/lsbench ]; then
    echo "run_experiment.sh: /proc/lsbench is missing: load the lsbench module first" >&2
    exit 1
fi
mkdir -p results
echo "n,comparisons,usec,sorted" > results/table2.csv
for n in 1000 10000 100000 1000000; do
    echo "$n" > /proc/lsbench
    cat /proc/lsbench >> results/table2.csv
done
echo "wrote results/table2.csv"
