#!/usr/bin/env bash
# The isolation of one cleanroom sandbox environment, assembled by hand with
# shell tools, timed N times: the baseline of the "within 1.2x of hand-made"
# performance target (DESIGN.md, "Performance targets").
#
# One trial ("full"):
#   sparse file + mkfs.ext4 + loop mount (disk limit), overlayfs over the base
#   image (lower) with upper/work on that disk, a cgroup (v1 or v2, memory +
#   pids) created and joined, bubblewrap with fresh PID/IPC/UTS/net/cgroup
#   namespaces, /proc, /dev, the kept capabilities only, running /bin/true;
#   then unmount, remove the cgroup and the directory.
# Variant "light": no disk limit (overlay upper on the host file system) and
#   no cgroup; the same bubblewrap.
# Every mount is made inside `unshare -m` with private propagation, so
# nothing leaks to the host even if a step fails.
#
# Usage: scripts/handmade-sandbox.sh [full|light|both]   (default both)
# Env: N (default 50), WARMUP (default 2), DISK_MB (20480), MEMORY_MB (4096),
#      PIDS_MAX (4096), CLEANROOM_HOME (/var/lib/cleanroom), LOWER (image
#      rootfs), WORKDIR (scratch parent, default $TMPDIR or /tmp), RAW_DIR (if
#      set, every sample in ms is appended to $RAW_DIR/handmade-<variant>.txt).
# Output lines: RESULT handmade-<variant> median_ms=.. p10_ms=.. p90_ms=..
set -euo pipefail

MODE=${1:-both}
N=${N:-50}
WARMUP=${WARMUP:-2}
DISK_MB=${DISK_MB:-20480}
MEMORY_MB=${MEMORY_MB:-4096}
PIDS_MAX=${PIDS_MAX:-4096}
HOME_DIR=${CLEANROOM_HOME:-/var/lib/cleanroom}
LOWER=${LOWER:-$HOME_DIR/images/debian-12-minimal/rootfs}
WORKDIR=${WORKDIR:-${TMPDIR:-/tmp}}

[ "$(id -u)" = 0 ] || { echo "handmade-sandbox.sh: needs root" >&2; exit 1; }
[ -d "$LOWER/usr" ] || { echo "handmade-sandbox.sh: no base image rootfs at $LOWER" >&2; exit 1; }
for t in bwrap unshare mkfs.ext4 mount umount truncate; do
    command -v "$t" >/dev/null || { echo "handmade-sandbox.sh: $t missing" >&2; exit 1; }
done

SCRATCH=$(mktemp -d "$WORKDIR/handmade-sandbox.XXXXXX")
CG_PARENT=cleanroom-handmade
cleanup() {
    rm -rf "$SCRATCH" 2>/dev/null || true
}
trap cleanup EXIT

# Same capabilities as crates/cleanroom-env/src/sandbox/caps.rs keeps.
CAPS=(--cap-drop ALL)
for c in CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE SYS_CHROOT AUDIT_WRITE SETFCAP; do
    CAPS+=(--cap-add "CAP_$c")
done

# cgroup layout: v2 unified at /sys/fs/cgroup, else v1 memory + pids.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CG_KIND=v2
    mkdir -p /sys/fs/cgroup/$CG_PARENT
    echo "+memory +pids" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    echo "+memory +pids" > /sys/fs/cgroup/$CG_PARENT/cgroup.subtree_control 2>/dev/null || true
elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] && [ -d /sys/fs/cgroup/pids ]; then
    CG_KIND=v1
    mkdir -p /sys/fs/cgroup/memory/$CG_PARENT /sys/fs/cgroup/pids/$CG_PARENT
else
    echo "handmade-sandbox.sh: no usable cgroup (v1 memory+pids or v2)" >&2
    exit 1
fi

# The trial, run as `unshare -m --propagation private bash -c "$TRIAL" ...`.
# $1 variant, $2 trial dir, $3 lower, $4 disk MB, $5 cgroup kind, $6 cgroup
# name, $7 memory bytes, $8 pids max, then the bubblewrap capability args.
# shellcheck disable=SC2016
TRIAL='set -e
variant=$1 d=$2 lower=$3 disk_mb=$4 cg_kind=$5 cg=$6 mem=$7 pids=$8
shift 8
mkdir -p "$d/root"
cgdirs=()
if [ "$variant" = full ]; then
    mkdir "$d/disk"
    truncate -s "${disk_mb}M" "$d/disk.img"
    mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=1,nodiscard -m 0 "$d/disk.img"
    mount -o loop,nosuid,nodev "$d/disk.img" "$d/disk"
    mkdir "$d/disk/upper" "$d/disk/work"
    mount -t overlay overlay -o "lowerdir=$lower,upperdir=$d/disk/upper,workdir=$d/disk/work" "$d/root"
    if [ "$cg_kind" = v2 ]; then
        cgdirs=("/sys/fs/cgroup/$cg")
        mkdir "${cgdirs[0]}"
        echo "$mem" > "${cgdirs[0]}/memory.max"
        echo "$pids" > "${cgdirs[0]}/pids.max"
    else
        cgdirs=("/sys/fs/cgroup/memory/$cg" "/sys/fs/cgroup/pids/$cg")
        mkdir "${cgdirs[@]}"
        echo "$mem" > "${cgdirs[0]}/memory.limit_in_bytes"
        echo "$pids" > "${cgdirs[1]}/pids.max"
    fi
else
    mkdir "$d/upper" "$d/work"
    mount -t overlay overlay -o "lowerdir=$lower,upperdir=$d/upper,workdir=$d/work" "$d/root"
fi
# bubblewrap joins the cgroup (a subshell writes its own pid, then execs).
(
    for c in "${cgdirs[@]}"; do echo "$BASHPID" > "$c/cgroup.procs"; done
    exec bwrap --bind "$d/root" / --proc /proc --dev /dev --tmpfs /dev/shm \
        --ro-bind /sys /sys --tmpfs /sys/fs/cgroup --remount-ro /sys/fs/cgroup \
        --unshare-pid --unshare-ipc --unshare-uts --unshare-net --unshare-cgroup-try \
        --hostname cleanroom --new-session --die-with-parent --clearenv --chdir / \
        "$@" -- /bin/true
)
umount "$d/root"
if [ "$variant" = full ]; then
    umount "$d/disk"
    # A process that just exited can keep the cgroup busy for a moment.
    for c in "${cgdirs[@]}"; do
        tries=0
        until rmdir "$c" 2>/dev/null; do
            tries=$((tries + 1))
            [ "$tries" -lt 2000 ] || { rmdir "$c"; exit 1; }
            sleep 0.001
        done
    done
fi
rm -rf "$d"'

# Durations in microseconds, one per line, to stdout.
run_variant() {
    local variant=$1 i d t0 t1 total=$((WARMUP + N))
    local cg_rel
    for ((i = 0; i < total; i++)); do
        d=$SCRATCH/t$i
        cg_rel=$CG_PARENT/t$$-$i
        t0=$EPOCHREALTIME
        if ! unshare -m --propagation private bash -c "$TRIAL" trial "$variant" "$d" "$LOWER" "$DISK_MB" \
            "$CG_KIND" "$cg_rel" $((MEMORY_MB * 1024 * 1024)) "$PIDS_MAX" "${CAPS[@]}"; then
            # Not counted; what it left is removed (its mounts died with its namespace).
            echo "handmade-sandbox.sh: $variant trial $i failed" >&2
            echo failed >>"$SCRATCH/failed-$variant"
            for c in /sys/fs/cgroup/$cg_rel /sys/fs/cgroup/memory/$cg_rel /sys/fs/cgroup/pids/$cg_rel; do
                [ -d "$c" ] && rmdir "$c" 2>/dev/null
            done
            rm -rf "$d"
            continue
        fi
        t1=$EPOCHREALTIME
        if ((i >= WARMUP)); then
            echo $(( (${t1/./} - ${t0/./}) ))
        fi
    done
}

# Reads microseconds on stdin; prints "median_ms=.. p10_ms=.. p90_ms=.. min_ms=.. max_ms=..".
summarize() {
    sort -n | awk '
        { v[NR] = $1 / 1000.0 }
        function rank(p,  r) { r = int(p / 100.0 * NR); if (r < p / 100.0 * NR) r++; if (r < 1) r = 1; return v[r] }
        END {
            med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "median_ms=%8.2f p10_ms=%8.2f p90_ms=%8.2f min_ms=%8.2f max_ms=%8.2f\n", med, rank(10), rank(90), v[1], v[NR]
        }'
}

echo "hand-made sandbox: N=$N (+$WARMUP warm-up), disk_mb=$DISK_MB memory_mb=$MEMORY_MB pids_max=$PIDS_MAX cgroup=$CG_KIND lower=$LOWER"
case $MODE in
    full | light) variants=("$MODE") ;;
    both) variants=(full light) ;;
    *) echo "usage: $0 [full|light|both]" >&2; exit 2 ;;
esac
for v in "${variants[@]}"; do
    case $v in
        full) what="loop ext4 + overlay + cgroup (memory, pids) + bwrap (pid/ipc/uts/net/cgroup ns, caps) /bin/true" ;;
        light) what="overlay + bwrap (pid/ipc/uts/net/cgroup ns, caps) /bin/true; no disk limit, no cgroup" ;;
    esac
    echo "-- handmade-$v: $what"
    samples=$(run_variant "$v")
    if [ -n "${RAW_DIR:-}" ] && [ -n "$samples" ]; then
        mkdir -p "$RAW_DIR"
        awk '{ printf "%.3f\n", $1 / 1000.0 }' <<<"$samples" >>"$RAW_DIR/handmade-$v.txt"
    fi
    note=""
    if [ -f "$SCRATCH/failed-$v" ]; then
        note=" FAILED_TRIALS=$(wc -l <"$SCRATCH/failed-$v")"
    fi
    echo "RESULT handmade-$v $(summarize <<<"$samples")$note"
done
# The parent cgroups are left (empty, harmless); remove them if possible.
if [ "$CG_KIND" = v2 ]; then
    rmdir /sys/fs/cgroup/$CG_PARENT 2>/dev/null || true
else
    rmdir /sys/fs/cgroup/memory/$CG_PARENT /sys/fs/cgroup/pids/$CG_PARENT 2>/dev/null || true
fi
