#!/bin/sh
# Table 1: primes and twin primes below 10^4 .. 4 * 10^6, counted by the
# bare-metal kernel in QEMU (one boot per limit).
set -e
cd "$(dirname "$0")"
mkdir -p results
echo "limit,primes,pairs" > results/table1.csv
for limit in 10000 100000 1000000 4000000; do
    qemu -kernel sieve.elf -append "limit=$limit" -nographic -monitor none \
        -device isa-debug-exit,iobase=0xf4,iosize=4 | tr -d '\r' | grep -E '^[0-9]+,' >> results/table1.csv || true
done
echo "wrote results/table1.csv"
