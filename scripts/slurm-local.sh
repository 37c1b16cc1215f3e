#!/usr/bin/env bash
# A Slurm cluster on this machine, for cleanroom's Slurm executor and its
# tests (run as root; jobs then run as whoever submits them).
#
#   scripts/slurm-local.sh start [N]  munged, slurmctld and N slurmd (default
#                                     2), each slurmd a node of its own name
#                                     (crnode1, crnode2, ...) on this host, in
#                                     one partition `local`; waits until every
#                                     node is idle, and prints the
#                                     configuration's path
#   scripts/slurm-local.sh stop       every job cancelled, every daemon
#                                     stopped, every file it made removed
#   scripts/slurm-local.sh kill-node NAME
#                                     that node's slurmd killed at once, as a
#                                     node that dies (its jobs' processes too)
#   scripts/slurm-local.sh restart-node NAME
#                                     that node's slurmd started again
#
# From Debian's packages: slurmctld, slurmd, slurm-client, munge. The
# configuration goes to /etc/slurm/slurm.conf (where every Slurm command
# looks), marked as this script's; one that is not this script's is never
# touched. Nodes share this machine's file systems, as a cluster's nodes
# share its home and scratch.
set -euo pipefail

STATE=/var/lib/cleanroom-slurm-local
CONF=/etc/slurm/slurm.conf
MARK="# made by cleanroom's scripts/slurm-local.sh"
PARTITION=local
START_TIMEOUT=${SLURM_LOCAL_START_TIMEOUT:-120}

die() { echo "slurm-local.sh: $*" >&2; exit 2; }
say() { echo "slurm-local.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || die "run as root (slurmd starts jobs as their users)"

ours() { [ -f "$CONF" ] && head -1 "$CONF" | grep -qxF "$MARK"; }

install_packages() {
  local missing=()
  for tool in slurmctld slurmd sbatch munged; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Slurm and munge (missing: ${missing[*]})"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    slurmctld slurmd slurm-client munge >/dev/null
}

# What each node offers: this machine's CPUs and most of its memory, shared
# (the nodes are one machine; Slurm's own accounting keeps jobs apart).
write_conf() {
  local nodes=$1 cpus mem host
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)
  host=$(hostname)
  mkdir -p "$STATE/ctld" /etc/slurm
  chown slurm: "$STATE/ctld"
  {
    echo "$MARK"
    cat <<EOF
ClusterName=cleanroom-local
SlurmctldHost=$host
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/%n/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/%n/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/%n/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdTimeout=20
InactiveLimit=0
KillWait=5
MinJobAge=300
SchedulerType=sched/backfill
# Start the next element as soon as one ends (the defaults wait seconds:
# a cluster tuned for many small jobs does the same).
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
EOF
    for n in $(seq 1 "$nodes"); do
      echo "NodeName=crnode$n NodeHostname=$host Port=$((16900 + n)) CPUs=$cpus RealMemory=$mem State=UNKNOWN"
    done
    echo "PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
  } >"$CONF"
  for n in $(seq 1 "$nodes"); do mkdir -p "$STATE/crnode$n/spool"; done
  echo "$nodes" >"$STATE/nodes"
}

start_munge() {
  pgrep -x munged >/dev/null && return 0
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge: /run/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || { mungekey --create >/dev/null 2>&1 || create-munge-key >/dev/null; }
  chown munge: /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  # --force: a munged killed before left its socket's lock behind.
  runuser -u munge -- munged --force
  touch "$STATE/munged-ours"
}

start_slurmd() {
  local node=$1
  slurmd -N "$node" -f "$CONF"
}

node_names() { seq 1 "$(cat "$STATE/nodes")" | sed 's/^/crnode/'; }

wait_idle() {
  local waited=0 states
  while :; do
    states=$(sinfo -h -N -p "$PARTITION" -o '%T' 2>/dev/null | sort -u | tr '\n' ' ' || true)
    case "$states" in
      "idle ") return 0 ;;
    esac
    [ $waited -lt $((START_TIMEOUT * 10)) ] || die "nodes not idle within ${START_TIMEOUT}s (states: ${states:-none}); see $STATE/*.log"
    sleep 0.1
    waited=$((waited + 1))
  done
}

start() {
  local nodes=${1:-2}
  [[ "$nodes" =~ ^[1-9][0-9]?$ ]] || die "start N: N is a number of nodes, 1 to 99"
  if [ -f "$CONF" ] && ! ours; then
    die "$CONF is not this script's: a Slurm is configured here already"
  fi
  install_packages
  stop_daemons
  local munged_ours=
  [ -f "$STATE/munged-ours" ] && munged_ours=1
  rm -rf "$STATE"
  mkdir -p "$STATE"
  [ -z "$munged_ours" ] || touch "$STATE/munged-ours"
  write_conf "$nodes"
  start_munge
  slurmctld -f "$CONF"
  for node in $(node_names); do start_slurmd "$node"; done
  wait_idle
  say "$nodes node(s) idle in partition $PARTITION; configuration: $CONF"
  echo "$CONF"
}

pid_of() { cat "$1" 2>/dev/null || true; }

kill_pidfile() {
  local pid
  pid=$(pid_of "$1")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
}

stop_daemons() {
  [ -d "$STATE" ] || return 0
  if ours && pgrep -x slurmctld >/dev/null; then
    scancel --full --quiet --partition="$PARTITION" 2>/dev/null || true
  fi
  for dir in "$STATE"/crnode*; do
    [ -d "$dir" ] && kill_pidfile "$dir/slurmd.pid"
  done
  kill_pidfile "$STATE/slurmctld.pid"
  # What the nodes' jobs left: slurmstepd and its children.
  pkill -KILL -x slurmstepd 2>/dev/null || true
}

stop_munge() {
  [ -f "$STATE/munged-ours" ] || return 0
  kill_pidfile /run/munge/munged.pid
}

stop() {
  stop_daemons
  stop_munge
  rm -rf "$STATE"
  if ours; then rm -f "$CONF"; fi
  say "stopped; nothing of it is left"
}

node_dir() {
  local node=${1:-}
  [ -n "$node" ] && [ -d "$STATE/$node" ] || die "no node named '${node}' (they are $(node_names | tr '\n' ' '))"
  echo "$STATE/$node"
}

# The processes of the jobs running on `node`: those whose environment
# names it, and the slurmstepd above each.
node_processes() {
  local node=$1 pid parent
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    if { tr '\0' '\n' <"$dir/environ"; } 2>/dev/null | grep -qxF "SLURMD_NODENAME=$node"; then
      echo "$pid"
      parent=$(awk '{ print $4 }' "$dir/stat" 2>/dev/null || true)
      [ -n "$parent" ] && [ "$(cat "/proc/$parent/comm" 2>/dev/null)" = slurmstepd ] && echo "$parent"
    fi
  done | sort -u
}

kill_node() {
  local node=${1:-} dir
  dir=$(node_dir "$node")
  kill_pidfile "$dir/slurmd.pid"
  # A dead node's jobs die with it.
  for pid in $(node_processes "$node"); do kill -KILL "$pid" 2>/dev/null || true; done
  say "$node's slurmd and its jobs killed"
}

case "${1:-}" in
  start) start "${2:-2}" ;;
  stop) stop ;;
  kill-node) kill_node "${2:-}" ;;
  restart-node) node_dir "${2:-}" >/dev/null && start_slurmd "$2" && say "$2's slurmd started" ;;
  *) die "usage: slurm-local.sh start [N] | stop | kill-node NAME | restart-node NAME" ;;
esac
