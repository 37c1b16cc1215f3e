#!/usr/bin/env bash
# Runs the test suite's runner, cargo-nextest, at the version the suite is
# written for (.config/nextest.toml's test groups and filters): the one on
# the PATH if it is that version, else one installed once from crates.io
# (about 5 minutes on 2 cores) into a fixed place outside the checkout:
# /var/cache/cleanroom/nextest for root, ~/.cache/cleanroom/nextest for
# anyone else. Every argument goes to `cargo nextest`.
#
#   bash scripts/nextest.sh run                   the whole suite (root, services)
#   bash scripts/nextest.sh run --profile fast    no root, no services, no network
set -euo pipefail
VERSION=0.9.143
if [ "$(id -u)" = 0 ]; then
  root=/var/cache/cleanroom/nextest
else
  root=${XDG_CACHE_HOME:-$HOME/.cache}/cleanroom/nextest
fi
has_version() {
  "$1" --version 2>/dev/null | head -1 | grep -qx "cargo-nextest $VERSION.*"
}
nextest=$(command -v cargo-nextest || true)
if [ -z "$nextest" ] || ! has_version "$nextest"; then
  nextest=$root/bin/cargo-nextest
  if ! has_version "$nextest"; then
    echo "nextest.sh: installing cargo-nextest $VERSION into $root (once)" >&2
    mkdir -p "$root"
    # One installer at a time; a second waits and finds it installed.
    exec 9>"$root/.lock"
    flock 9
    has_version "$nextest" || cargo install --quiet --locked --root "$root" cargo-nextest --version "$VERSION"
  fi
fi
cd "$(dirname "$0")/.."
exec "$nextest" nextest "$@"
