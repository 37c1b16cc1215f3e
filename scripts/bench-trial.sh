#!/usr/bin/env bash
# The time of one trial end to end, per backend: a Harbor-format task
# (tests/fixtures/harbor/wordcount, imported with `cleanroom tasks import
# harbor`) run N times with the oracle, on the sandbox and in containers of
# Podman's API service and of Docker's dockerd (scripts/container-engines.sh
# start). Prints, per backend, the median and the 10th/90th percentiles of
# a trial's wall time (environment made, the agent's phase, the
# verifier's), from each trial's result.json. Needs root. Always exits 0
# (a benchmark, not a test). Harbor itself: scripts/harbor-side-by-side.sh.
#
# Env: N (trials per backend, default 10), CLEANROOM_BIN (default
#      target/release/cleanroom).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-10}
BIN=${CLEANROOM_BIN:-$REPO/target/release/cleanroom}
ENGINES=/run/cleanroom-test
WORK=$(mktemp -d /tmp/cleanroom-bench-trial.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

log() { echo "bench-trial.sh: $*" >&2; }
[ -x "$BIN" ] || { log "$BIN is missing: cargo build --release --locked first; nothing measured"; exit 0; }
"$BIN" tasks import harbor "$REPO/tests/fixtures/harbor/wordcount" "$WORK/tasks/wordcount" >/dev/null 2>&1 \
    || { log "the import failed; nothing measured"; exit 0; }

echo "== one trial end to end, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-17s %10s %10s %10s %4s\n' backend median_s p10_s p90_s n
for target in sandbox container-podman container-docker; do
    backend=${target%%-*}
    out=$WORK/runs-$target
    if ! DOCKER_HOST=unix://$ENGINES/${target#container-}.sock \
        "$BIN" run --tasks "$WORK/tasks" --agent oracle --trials "$N" --backend "$backend" --out "$out" \
        >"$WORK/$target.log" 2>&1; then
        log "$target: the run failed ($(tail -1 "$WORK/$target.log"))"
        continue
    fi
    # Each trial's phases summed: result.json's flat "timings" object.
    find "$out" -name result.json -path '*/trials/*' -print0 \
        | xargs -0 -n1 sh -c 'tr -d " \n\t" <"$0" | grep -o "\"timings\":{[^}]*}"; echo' \
        | grep . | awk -F'[:,}]' '{ t = 0; for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.eE+-]+$/) t += $i; print t }' \
        | sort -n >"$WORK/$target.times"
    awk -v b="$target" '{ v[NR] = $1 }
        function at(p) { r = int(p * (NR - 1) + 0.5) + 1; return v[r] }
        END { if (NR == 0) { print b ": no results read" > "/dev/stderr"; exit }
              med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%-17s %10.3f %10.3f %10.3f %4d\n", b, med, at(0.1), at(0.9), NR }' "$WORK/$target.times"
done
