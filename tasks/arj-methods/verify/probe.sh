#!/bin/bash
# Compress files the agent never saw with the ARJ built from this tree,
# all four methods, and check the round trip.
# Usage: probe.sh [NAME]  (writes $CLEANROOM_OUT/NAME.csv, default probe)
set -eo pipefail
ARJ=$CLEANROOM_ARTIFACT/linux-gnu/en/rs/arj/arj
W=$(mktemp -d)
cp "$CLEANROOM_VERIFY/records.csv" "$CLEANROOM_VERIFY/mixed.bin" "$W/"
out=$CLEANROOM_OUT/${1:-probe}.csv
echo "key,file,method,compressed,sha256_after_roundtrip" > "$out"
for f in records.csv mixed.bin; do
    for m in 1 2 3 4; do
        (cd "$W" && "$ARJ" a -m$m -y "p$m.arj" "$f") > /dev/null
        comp=$("$ARJ" l "$W/p$m.arj" | awk -v f="$f" '$1 == f { print $3 }')
        rm -rf "$W/x" && mkdir "$W/x"
        (cd "$W/x" && "$ARJ" e -y "../p$m.arj") > /dev/null
        sum=$(sha256sum "$W/x/$f" | cut -d' ' -f1)
        echo "$f-m$m,$f,$m,$comp,$sum" >> "$out"
        rm -f "$W/p$m.arj"
    done
done
cat "$out"
