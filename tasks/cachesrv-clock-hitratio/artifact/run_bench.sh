#!/bin/bash
# Table 3: hit ratio of the running cachesrv (its configured policy and
# capacity) on the three workload traces.
set -eu
cd "$(dirname "$0")"
mkdir -p results
echo "trace,requests,hits,hit_ratio" > results/table3.csv
for t in traces/web.trace traces/db.trace traces/scan.trace; do
    ./cachebench 127.0.0.1 11311 "$t" >> results/table3.csv
done
echo "wrote results/table3.csv"
