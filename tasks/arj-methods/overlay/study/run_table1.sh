#!/bin/sh
# Table 1 of the study: compressed size of every corpus file with ARJ
# methods 1-4, gzip -9 for reference, and a round-trip check.
# Needs the ARJ built from this tree (study/build_arj.sh).
# Output: results/table1.csv
set -e
cd "$(dirname "$0")/.."
TOP=$(pwd)
ARJ=$TOP/linux-gnu/en/rs/arj/arj
if [ ! -x "$ARJ" ]; then
    echo "no ARJ binary at $ARJ -- build ARJ first (see STUDY.md)" >&2
    exit 1
fi

mkdir -p results work
cc -O2 -o work/gencorpus study/gencorpus.c
rm -rf work/corpus work/arc work/x
mkdir -p work/corpus work/arc work/x
work/gencorpus 2005 work/corpus

out=results/table1.csv
echo "file,method,original,compressed,ratio,roundtrip" > $out
for f in text.txt source.c table.bin random.bin server.log; do
    orig=$(wc -c < work/corpus/$f)
    for m in 1 2 3 4; do
        a=$TOP/work/arc/$f.m$m.arj
        (cd work/corpus && "$ARJ" a -m$m -y "$a" $f) > work/arj.log 2>&1
        comp=$("$ARJ" l "$a" | awk -v f=$f '$1 == f { print $3 }')
        rm -rf work/x && mkdir work/x
        (cd work/x && "$ARJ" e -y "$a") >> work/arj.log 2>&1
        if cmp -s work/corpus/$f work/x/$f; then rt=ok; else rt=FAILED; fi
        echo "$f,arj-m$m,$orig,$comp,$(awk -v c=$comp -v o=$orig 'BEGIN { printf "%.4f", c / o }'),$rt" >> $out
    done
    comp=$(gzip -9 -n -c work/corpus/$f | wc -c)
    echo "$f,gzip-9,$orig,$comp,$(awk -v c=$comp -v o=$orig 'BEGIN { printf "%.4f", c / o }'),ok" >> $out
done
cat $out
