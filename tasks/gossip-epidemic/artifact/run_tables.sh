#!/bin/sh
# Regenerate Tables 1 and 2 of the paper -> results/table1.csv, results/table2.csv
set -e
cd "$(dirname "$0")"
ant -q jar
mkdir -p results
java -jar dist/gossipsim.jar -c conf/table1.properties -o results/table1.csv
java -jar dist/gossipsim.jar -c conf/table2.properties -o results/table2.csv
echo "wrote results/table1.csv results/table2.csv"
