#!/usr/bin/env bash
# The full check of the bundled suite: for every task in tasks/, the schema,
# the artifact, no leaked expected value, the oracle passes, nop fails, and
# a second verification agrees. Prints the table and the time it took.
# Run as root from the repository (about 10 minutes on 2 cores: 579 s
# for 16 tasks with JOBS=2 when it was written).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked
start=$(date +%s)
status=0
target/release/cleanroom tasks check tasks/ --jobs "${JOBS:-2}" || status=$?
echo "suite check: $(( $(date +%s) - start )) s, exit $status"
exit $status
