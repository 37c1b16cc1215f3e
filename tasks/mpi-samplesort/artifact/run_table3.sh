#!/bin/sh
# Table 3 of the paper: PSRS on the seven HBJ input distributions,
# N = 2^21 records on 2 processes, with K = 2 (= P, plain PSRS), 3, 8 and 64
# regular samples per process.  Output: results/table3.csv
set -e
cd "$(dirname "$0")"
make
mkdir -p results
rm -f results/table3.csv
for k in 2 3 8 64; do
    mpirun -np 2 ./psort -n 2097152 -d all -k $k -s 20080915 -o results/k$k.csv
    if [ -f results/table3.csv ]; then
        tail -n +2 results/k$k.csv >> results/table3.csv
    else
        cat results/k$k.csv > results/table3.csv
    fi
    rm -f results/k$k.csv
done
cat results/table3.csv
