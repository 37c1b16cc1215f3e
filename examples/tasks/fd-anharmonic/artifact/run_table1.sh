#!/bin/bash
# Regenerate Table 1 of the paper: the four lowest levels of the three
# model potentials, on the 400- and 801-point grids and extrapolated.
# Output: results/table1.csv
set -e
cd "$(dirname "$0")"

make -s qwell

mkdir -p results
out=results/table1.csv
echo "id,case,ipot,level,E_N1,E_N2,E_extrap" > "$out"
for c in harmonic anharmonic quartic; do
    ./qwell < "input/$c.in" | tr -d ' ' |
        awk -F, -v c="$c" 'NF >= 4 { print c "-" $2 "," c "," $0 }' >> "$out"
done
echo "wrote $out ($(($(wc -l < "$out") - 1)) rows)"
