#!/bin/sh
# Table 1 of the report: measured vs. theoretical false-positive rates.
# Output: results/fpr.csv
set -e
cd "$(dirname "$0")"
cargo build --release --example fpr_study
mkdir -p results
./target/release/examples/fpr_study --out results/fpr.csv
cat results/fpr.csv
