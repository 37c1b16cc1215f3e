#!/bin/bash
# Reference deployment for bloom-fpr.
# Snags: Debian's cargo 1.63 fetches the crates.io index with git from
# GitHub, which is unreachable (its sparse-index support is still unstable
# in 1.63), so `cargo build` cannot resolve anything; and the verifier
# builds offline.  Fix: vendor exactly the versions of the shipped Cargo.lock
# from static.crates.io (which is reachable) into vendor/, with the
# .cargo-checksum.json files that cargo's directory sources need, and point
# crates-io at that directory in ~/.cargo/config.toml.
# (Debian's librust-*-dev packages with /usr/share/cargo/registry as a
# directory source work as well, with a re-resolved lock.)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends cargo curl ca-certificates

cd /workspace/artifact
mkdir -p vendor
# name version from every registry package of Cargo.lock
awk '/^name = /{n=$3} /^version = /{v=$3} /^source = "registry/{gsub(/"/,"",n); gsub(/"/,"",v); print n, v}' Cargo.lock |
while read -r name version; do
    d=vendor/$name-$version
    [ -d "$d" ] && continue
    curl -sSfL -o /tmp/$name-$version.crate "https://static.crates.io/crates/$name/$name-$version.crate"
    mkdir -p "$d"
    tar -xzf /tmp/$name-$version.crate -C "$d" --strip-components=1
    sum=$(sha256sum /tmp/$name-$version.crate | cut -d' ' -f1)
    grep -q "checksum = \"$sum\"" Cargo.lock   # the lock pins exactly this file
    printf '{"files":{},"package":"%s"}\n' "$sum" > "$d/.cargo-checksum.json"
done
ls vendor

mkdir -p /root/.cargo
cat > /root/.cargo/config.toml <<'TOML'
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "/workspace/artifact/vendor"

[net]
offline = true
TOML

cargo build --release --locked --example fpr_study
./run_table1.sh
