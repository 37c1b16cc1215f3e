#!/usr/bin/env bash
# Checks the "Performance targets" of DESIGN.md on this machine:
#   1. cleanroom sandbox lifecycle (crates/cleanroom-env/benches/sandbox.rs),
#      cold and from the pool of environments made ahead of need
#   2. the same isolation by hand (scripts/handmade-sandbox.sh)
#   3. `podman run --rm ... /bin/true` with --rootfs (no registry needed)
#   4. one `nop` trial end to end through the CLI, if it is built
#   5. the vm backend's lifecycle (create, a file written, boot, /bin/true,
#      power off, destroy) with the accelerator the probe picks, and with
#      TCG; each booted cold and resumed from a booted snapshot
# and prints a table. Needs root. Always exits 0 (a benchmark, not a test).
#
# cleanroom and hand-made samples are taken in alternating rounds and pooled,
# so a change in machine load hits both alike.
#
# Env: N (samples per variant, default 50), ROUNDS (default 5), PODMAN_N (20),
#      CLI_N (10), VM_N (5), CARGO_TARGET_DIR (default <repo>/target), CLEANROOM_BIN
#      (default $CARGO_TARGET_DIR/release/cleanroom, then <repo>/target/release/cleanroom),
#      BENCH_DISK_MB / BENCH_MEMORY_MB / BENCH_PIDS_MAX (20480 / 4096 / 4096),
#      CLEANROOM_HOME (base image location, default /var/lib/cleanroom).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 0
N=${N:-50}
ROUNDS=${ROUNDS:-5}
PODMAN_N=${PODMAN_N:-20}
CLI_N=${CLI_N:-10}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
export BENCH_DISK_MB=${BENCH_DISK_MB:-20480} BENCH_MEMORY_MB=${BENCH_MEMORY_MB:-4096} BENCH_PIDS_MAX=${BENCH_PIDS_MAX:-4096}
HOME_DIR=${CLEANROOM_HOME:-/var/lib/cleanroom}
ROOTFS=$HOME_DIR/images/debian-12-minimal/rootfs
PER_ROUND=$(( (N + ROUNDS - 1) / ROUNDS ))

WORK=$(mktemp -d /tmp/cleanroom-bench.XXXXXX)
RAW=$WORK/raw
mkdir -p "$RAW"
trap 'rm -rf "$WORK"' EXIT

log() { echo "bench.sh: $*" >&2; }

# Median / p10 / p90 of a file of numbers (ms), one per line.
stats() {
    [ -s "$1" ] || { echo "nan nan nan 0"; return; }
    sort -n "$1" | awk '
        { v[NR] = $1 }
        function rank(p,  r) { r = int(p / 100.0 * NR); if (r < p / 100.0 * NR) r++; if (r < 1) r = 1; return v[r] }
        END { med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f %d\n", med, rank(10), rank(90), NR }'
}
median() { stats "$1" | cut -d' ' -f1; }
# a / b, or "n/a"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2fx", a / b }'; }

[ "$(id -u)" = 0 ] || { log "needs root (namespaces, mounts, cgroups); nothing measured"; exit 0; }

echo "== cleanroom benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   N=$N in $ROUNDS rounds, disk_mb=$BENCH_DISK_MB memory_mb=$BENCH_MEMORY_MB pids_max=$BENCH_PIDS_MAX"

# ---- tools ------------------------------------------------------------------
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
    log "installing podman and runc (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y podman runc >"$WORK/apt.log" 2>&1 \
        || { apt-get update >>"$WORK/apt.log" 2>&1 && apt-get install -y podman runc >>"$WORK/apt.log" 2>&1; } \
        || log "podman/runc install failed (see apt output above); the podman row will be skipped"
fi

# ---- 1. build the sandbox benchmark -------------------------------------------
log "building the sandbox benchmark (release) in $CARGO_TARGET_DIR"
build() { cargo build --release "$@" -p cleanroom-env --benches --message-format=json-render-diagnostics 2>"$WORK/build.err"; }
if ! build --locked >"$WORK/build.json"; then
    if grep -q "lock file" "$WORK/build.err"; then
        log "Cargo.lock is out of date (--locked refused); building without --locked"
        build >"$WORK/build.json" || { cat "$WORK/build.err" >&2; }
    else
        cat "$WORK/build.err" >&2
    fi
fi
BENCH_BIN=$(grep '"executable":"[^"]*"' "$WORK/build.json" | grep '"name":"sandbox"' | grep '"kind":\["bench"\]' \
    | sed 's/.*"executable":"\([^"]*\)".*/\1/' | tail -1)
if [ -z "$BENCH_BIN" ] || [ ! -x "$BENCH_BIN" ]; then
    log "the sandbox benchmark did not build"
fi

# ---- 1+2. cleanroom and hand-made, alternating rounds -------------------------
bench_ok=1 hand_ok=1
for ((r = 1; r <= ROUNDS; r++)); do
    log "round $r/$ROUNDS: cleanroom sandbox ($PER_ROUND per variant)"
    if [ -n "$BENCH_BIN" ] && [ "$bench_ok" = 1 ]; then
        BENCH_N=$PER_ROUND BENCH_WARMUP=1 BENCH_RAW_DIR=$RAW "$BENCH_BIN" --bench >>"$WORK/bench.out" 2>>"$WORK/bench.err" \
            || { bench_ok=0; log "the sandbox benchmark failed:"; tail -5 "$WORK/bench.err" >&2; }
    fi
    log "round $r/$ROUNDS: hand-made ($PER_ROUND per variant)"
    if [ "$hand_ok" = 1 ]; then
        N=$PER_ROUND WARMUP=1 RAW_DIR=$RAW DISK_MB=$BENCH_DISK_MB MEMORY_MB=$BENCH_MEMORY_MB PIDS_MAX=$BENCH_PIDS_MAX \
            "$REPO/scripts/handmade-sandbox.sh" both >>"$WORK/hand.out" 2>>"$WORK/hand.err" \
            || { hand_ok=0; log "the hand-made sandbox failed:"; tail -5 "$WORK/hand.err" >&2; }
    fi
done

# ---- 3. podman ----------------------------------------------------------------
PODMAN_MED=nan
if command -v podman >/dev/null && command -v runc >/dev/null && [ -d "$ROOTFS/usr" ]; then
    # podman may write into the rootfs (/etc/hosts, /etc/resolv.conf...): a copy.
    PROOT=$WORK/podman-rootfs
    cp -a "$ROOTFS" "$PROOT"
    PODMAN=(podman run --rm --runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 --rootfs "$PROOT" /bin/true)
    log "podman: ${PODMAN[*]} ($PODMAN_N times + 1 warm-up)"
    if "${PODMAN[@]}" >"$WORK/podman.err" 2>&1; then
        for ((i = 0; i < PODMAN_N; i++)); do
            t0=$EPOCHREALTIME
            "${PODMAN[@]}" >>"$WORK/podman.err" 2>&1
            t1=$EPOCHREALTIME
            echo $(( ${t1/./} - ${t0/./} )) | awk '{ printf "%.3f\n", $1 / 1000.0 }' >>"$RAW/podman.txt"
        done
        PODMAN_MED=$(median "$RAW/podman.txt")
    else
        log "podman failed:"; tail -5 "$WORK/podman.err" >&2
    fi
else
    log "podman, runc or the base image rootfs missing: podman row skipped"
fi

# ---- 4. one nop trial through the CLI -----------------------------------------
CLI_ROW="skipped: no cleanroom binary"
CLI=${CLEANROOM_BIN:-}
if [ -z "$CLI" ]; then
    for c in "$CARGO_TARGET_DIR/release/cleanroom" "$REPO/target/release/cleanroom"; do
        [ -x "$c" ] && { CLI=$c; break; }
    done
fi
CLI_MED=nan
if [ -n "$CLI" ] && [ -x "$CLI" ] && "$CLI" run --help >/dev/null 2>&1; then
    T=$WORK/tasks/bench-nop
    mkdir -p "$T/artifact" "$T/verify"
    cat >"$T/task.toml" <<'EOF'
schema_version = 1

[task]
title = "bench: nop trial overhead"
domain = "systems"

[agent]
timeout_sec = 60
EOF
    echo "Nothing to do: this task measures the harness's own overhead." >"$T/instruction.md"
    echo "a file" >"$T/artifact/README"
    cat >"$T/verify/checks.toml" <<'EOF'
[[step]]
name = "s"
stage = "run"
run = "echo ok"

[[check]]
name = "the step ran"
file = "stdout:s"
regex = '(ok)'
equals = "ok"
EOF
    log "cli: $CLI run --tasks $T --agent nop ($CLI_N times + 1 warm-up)"
    cli_once() { "$CLI" run --tasks "$T" --agent nop --out "$WORK/runs" >>"$WORK/cli.out" 2>&1; }
    cli_once; echo "warm-up exit status $?" >>"$WORK/cli.out"
    for ((i = 0; i < CLI_N; i++)); do
        t0=$EPOCHREALTIME
        cli_once; rc=$?
        t1=$EPOCHREALTIME
        echo "exit status $rc" >>"$WORK/cli.out"
        echo $(( ${t1/./} - ${t0/./} )) | awk '{ printf "%.3f\n", $1 / 1000.0 }' >>"$RAW/cli.txt"
    done
    CLI_MED=$(median "$RAW/cli.txt")
    bad=$(grep -c '^exit status [^0]' "$WORK/cli.out")
    CLI_ROW="every run exited 0"
    [ "$bad" -gt 0 ] && CLI_ROW="($bad of $((CLI_N + 1)) runs exited non-zero; last lines: $(tail -3 "$WORK/cli.out" | tr '\n' ' '))"
elif [ -n "$CLI" ]; then
    CLI_ROW="skipped: $CLI does not support \`cleanroom run\`"
fi

# ---- 5. the vm backend ----------------------------------------------------------
VM_N=${VM_N:-5}
VM_ROWS=()
if [ -n "$BENCH_BIN" ] && command -v qemu-system-x86_64 >/dev/null \
    && cargo build --release --locked -p cleanroom-guest >>"$WORK/build.err" 2>&1; then
    # The machines' agent, which the benchmark binary does not sit beside.
    export CLEANROOM_GUEST_AGENT=$CARGO_TARGET_DIR/release/cleanroom-guest
    vm_bench() {  # vm_bench LABEL BOOT [ACCEL]
        log "vm backend ($1): $VM_N per variant"
        CLEANROOM_VM_ACCEL=${3:-} CLEANROOM_VM_BOOT=$2 BENCH_BACKEND=vm BENCH_VARIANTS=loopback,outbound BENCH_N=$VM_N BENCH_WARMUP=1 \
            BENCH_RAW_DIR=$RAW BENCH_RAW_PREFIX=vm-$1 "$BENCH_BIN" --bench >>"$WORK/vm.out" 2>>"$WORK/vm.err" \
            || { log "the vm benchmark failed:"; tail -5 "$WORK/vm.err" >&2; }
    }
    vm_bench probed-snapshot snapshot
    picked=$(grep -o 'cleanroom vm bench ([a-z]*)' "$WORK/vm.out" | tail -1 | sed 's/.*(\(.*\))/\1/')
    vm_bench probed-cold cold "$picked"
    VM_ROWS+=("probed-snapshot:${picked:-?}:snapshot" "probed-cold:${picked:-?}:cold")
    if [ "$picked" = kvm ]; then
        vm_bench tcg-snapshot snapshot tcg
        vm_bench tcg-cold cold tcg
        VM_ROWS+=("tcg-snapshot:tcg:snapshot" "tcg-cold:tcg:cold")
    fi
else
    log "the benchmark binary or qemu-system-x86_64 missing: vm rows skipped"
fi

# ---- table --------------------------------------------------------------------
CL=$(median "$RAW/cleanroom-loopback-total.txt")
CO=$(median "$RAW/cleanroom-outbound-total.txt")
HF=$(median "$RAW/handmade-full.txt")
HL=$(median "$RAW/handmade-light.txt")
echo
echo "== where cleanroom's time goes (median ms; p10-p90)"
# parts PREFIX LABEL: one line of the lifecycle's parts for each variant.
parts() {
    local variants=(loopback outbound)
    [ -s "$RAW/$1-pooled-total.txt" ] && variants+=(pooled)
    for v in "${variants[@]}"; do
        line="   $(printf '%-8s' "$2$v")"
        for part in create write_file begin_phase exec end_phase destroy total start; do
            read -r m p10 p90 n < <(stats "$RAW/$1-$v-$part.txt")
            line+="  $part $m ($p10-$p90)"
        done
        echo "$line  [n=$n]"
    done
}
parts cleanroom ""
for vm in "${VM_ROWS[@]}"; do
    IFS=: read -r label accel boot <<<"$vm"
    parts "vm-$label" "vm $accel $boot "
done
echo
echo "== results (median of N samples; ratio targets from DESIGN.md)"
printf '%-74s %10s  %s\n' "measurement" "median ms" "comparison"
row() { printf '%-74s %10s  %s\n' "$1" "$2" "$3"; }
read -r _ p10 p90 n < <(stats "$RAW/cleanroom-loopback-total.txt")
row "cleanroom sandbox, all limits, loopback (n=$n, p10 $p10, p90 $p90)" "$CL" ""
read -r _ p10 p90 n < <(stats "$RAW/cleanroom-outbound-total.txt")
row "cleanroom sandbox, all limits, outbound NAT (n=$n, p10 $p10, p90 $p90)" "$CO" ""
read -r m p10 p90 n < <(stats "$RAW/cleanroom-outbound-start.txt")
row "trial start, cold: create + files + agent phase, outbound (n=$n, p10 $p10, p90 $p90)" "$m" ""
read -r m p10 p90 n < <(stats "$RAW/cleanroom-pooled-start.txt")
ok=$(awk -v a="$m" 'BEGIN { print (a != "nan" && a < 10) ? "met" : "NOT met" }')
row "trial start from the pool (made ahead of need) (n=$n, p10 $p10, p90 $p90)" "$m" "target < 10 ms: $ok"
read -r _ p10 p90 n < <(stats "$RAW/handmade-full.txt")
row "hand-made: loop ext4+overlay+cgroup+netns+bwrap (n=$n, p10 $p10, p90 $p90)" "$HF" ""
read -r _ p10 p90 n < <(stats "$RAW/handmade-light.txt")
row "hand-made, no disk limit, no cgroup (n=$n, p10 $p10, p90 $p90)" "$HL" ""
r=$(ratio "$CL" "$HF"); ok=$(awk -v a="$CL" -v b="$HF" 'BEGIN { if (a == "nan" || b == "nan") print "?"; else print (a <= 1.2 * b) ? "MET" : "MISSED" }')
row "ratio cleanroom (loopback) / hand-made" "$r" "target <= 1.2x: $ok"
row "podman run --rm --rootfs /bin/true (n=$PODMAN_N)" "$PODMAN_MED" ""
r=$(ratio "$PODMAN_MED" "$CL"); ok=$(awk -v a="$PODMAN_MED" -v b="$CL" 'BEGIN { if (a == "nan" || b == "nan") print "?"; else print (a >= 4 * b) ? "MET" : "MISSED" }')
row "speed-up of cleanroom (loopback) over podman" "$r" "target >= 4x: $ok"
if [ "$CLI_MED" != nan ]; then
    over=$(awk -v a="$CLI_MED" -v b="$CL" 'BEGIN { if (b == "nan") print "n/a"; else printf "%.1f", a - b }')
    row "nop trial via CLI, whole command (n=$CLI_N)" "$CLI_MED" "$CLI_ROW"
    row "nop trial minus one sandbox lifecycle (loopback median)" "$over" "target (harness overhead) < 200 ms"
else
    row "nop trial via CLI" "-" "$CLI_ROW"
fi
for vm in "${VM_ROWS[@]}"; do
    IFS=: read -r label accel boot <<<"$vm"
    read -r m p10 p90 n < <(stats "$RAW/vm-$label-loopback-total.txt")
    target="target (KVM) < 2000 ms cold"
    [ "$boot" = snapshot ] && target="target (KVM) < 300 ms to the agent (write_file row above)"
    [ "$accel" = tcg ] && target="no target under TCG: measured"
    row "vm ($accel, $boot), create + file + boot + /bin/true + power off + destroy (n=$n, p10 $p10, p90 $p90)" "$m" "$target"
    read -r m p10 p90 n < <(stats "$RAW/vm-$label-loopback-write_file.txt")
    row "vm ($accel, $boot), first file written: the agent's boot alone (n=$n, p10 $p10, p90 $p90)" "$m" ""
    row "ratio vm ($accel, $boot) / cleanroom sandbox (loopback)" "$(ratio "$(median "$RAW/vm-$label-loopback-total.txt")" "$CL")" ""
done
if grep -q FAILED_TRIALS "$WORK/hand.out" 2>/dev/null; then
    echo "   WARNING: some hand-made trials failed (not counted): $(grep -o 'handmade-[a-z]*.*FAILED_TRIALS=[0-9]*' "$WORK/hand.out" | sed 's/ median.*FAILED/ FAILED/' | tr '\n' ' ')"
fi
echo "   load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit 0
