#!/usr/bin/env bash
# What the Slurm executor costs: the same N nop trials (default 100) of one
# example task run with the local executor and through Slurm, both --jobs
# JOBS (default 2), and the wall time per trial of each and their
# difference printed. Needs a running Slurm (scripts/slurm-local.sh start)
# and a built cleanroom (CLEANROOM_BIN, default target/release/cleanroom,
# then target/debug/cleanroom). A benchmark, not a test: exits 0 unless a
# run fails.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-100}
JOBS=${JOBS:-2}
TASK=${TASK:-fd-anharmonic}
BIN=${CLEANROOM_BIN:-}
if [ -z "$BIN" ]; then
  for candidate in "$REPO/target/release/cleanroom" "$REPO/target/debug/cleanroom"; do
    [ -x "$candidate" ] && { BIN=$candidate; break; }
  done
fi
[ -n "$BIN" ] || { echo "bench-slurm.sh: build cleanroom first (cargo build --release)" >&2; exit 2; }
OUT=$(mktemp -d /var/tmp/cleanroom-bench-slurm.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

# Seconds that `cleanroom run` with these arguments took.
timed() {
  local began ended
  began=$(date +%s.%N)
  "$BIN" run --tasks "$REPO/examples/tasks" --task "$TASK" --agent nop --trials "$N" --jobs "$JOBS" \
    --out "$OUT/$1" "${@:2}" >"$OUT/$1.log" 2>&1 || { echo "bench-slurm.sh: the $1 run failed:" >&2; tail -20 "$OUT/$1.log" >&2; exit 1; }
  ended=$(date +%s.%N)
  awk -v a="$began" -v b="$ended" 'BEGIN { print b - a }'
}

per() { awk -v s="$1" -v n="$N" 'BEGIN { printf "%.3f", s / n }'; }

mkdir -p "$OUT/local" "$OUT/slurm"
# A first run makes the image and stages the artifact for both.
"$BIN" run --tasks "$REPO/examples/tasks" --task "$TASK" --agent nop --out "$OUT/warm" >/dev/null 2>&1
local_s=$(timed local)
slurm_s=$(timed slurm --executor slurm)
printf '%-10s %8s %12s\n' executor "wall s" "s per trial"
printf '%-10s %8.1f %12s\n' local "$local_s" "$(per "$local_s")"
printf '%-10s %8.1f %12s\n' slurm "$slurm_s" "$(per "$slurm_s")"
printf 'Slurm overhead per trial: %s s (%d nop trials of %s, --jobs %d)\n' \
  "$(per "$(awk -v a="$local_s" -v b="$slurm_s" 'BEGIN { print b - a }')")" "$N" "$TASK" "$JOBS"
