#!/bin/bash
# Regenerate Table 2 (hit ratios on the synthetic workloads of Sec. 4.1).
# Output: results/table2.csv
set -e
cd "$(dirname "$0")"

make bin/cachesim
mkdir -p results
bin/cachesim -experiment experiments/table2.json -out results/table2.csv
echo "wrote results/table2.csv ($(($(wc -l < results/table2.csv) - 1)) rows)"
