#!/usr/bin/env bash
# The same Harbor-format tasks (tests/fixtures/harbor) in Harbor itself
# (PyPI harbor, Terminal-Bench's harness, through Podman) and in cleanroom
# (--backend container on Podman's API service, --backend sandbox):
#
#  1. Verdicts. Every task with the oracle and nop, NV trials each, in the
#     three: the oracle must pass and nop fail, in all three alike, but
#     that the sandbox skips a task whose Dockerfile builds its environment
#     (only the container backend builds one). With
#     ADVERSARIAL=1, two agents that forge the reward run too, for
#     information (ADVERSARIAL=cleanroom: in cleanroom only, where they are
#     checked): plant-outputs (tests/fixtures/agents/plant-outputs.sh:
#     writes /logs/verifier/reward.txt and reward.json, and more, then
#     exits) and replant-reward (leaves a detached process that keeps
#     /logs/verifier/reward.json at {"reward": 1}). cleanroom must fail
#     both; Harbor's verdicts on them are shown, not checked.
#  2. Time per trial (none with N=0). The oracle on TIMING_TASK, N trials one at a time,
#     per harness: the median of each trial's own record (start to end,
#     and its phases: environment, agent, verifier), and the command's
#     wall time divided by N (what a user waits, the CLI's start included).
#
# Harbor's settings (harbor run): -e podman (Harbor's Podman environment,
# with podman-compose 1.x from PyPI, installed into Harbor's venv, as its
# compose frontend: Podman 4.3 has no `podman compose`; the podman CLI,
# default runtime, same storage as the API service), -n 1 for timings
# and verdicts alike (JOBS>1 gives -n JOBS: here two builds at once once
# failed in Podman 4.3's build cache), -k trials, --yes, --quiet, its defaults
# otherwise (--delete: each trial's compose project and built image are
# removed after it, so each trial builds its image again), and
#  - telemetry off: HARBOR_TELEMETRY=0; HOME is a scratch directory, so
#    Harbor's ~/.cache/harbor and ~/.config/harbor stay out of root's home;
#  - --extra-docker-compose with a Compose overlay for the `main` service:
#    `init: true` (Podman's catatonit as PID 1; Harbor has no option of
#    its own), `network_mode: none`, ulimits nofile/nproc 4096 (Podman's
#    default nofile, 1048576, is over this host's hard limit and the
#    container fails to start; cleanroom's containers use the same 4096);
#  - the tasks copied with their `allow_internet = false` line removed:
#    Harbor's Docker/Podman environment enforces no-network only with its
#    egress sidecar, whose images (alpine, gogost/gost) come from Docker
#    Hub, which is unreachable here, so Harbor rejects such a task
#    ("network_mode='no-network' is not supported"); the overlay's
#    `network_mode: none` gives the container no network instead.
# The tasks' `FROM cleanroom/debian-12-minimal` must name an image in
# Podman's storage: cleanroom's first container run imports its base image
# as cleanroom/debian-12-minimal:<digest16> and tags it :latest. Nothing is
# pulled.
#
# At the end it removes what Harbor's runs left in Podman (containers,
# pods, networks, volumes of their compose projects, their hb__* images).
# Needs root (cleanroom's container backend does), Podman, and Podman's
# API service (`bash scripts/container-engines.sh start`). Installs Harbor
# (and podman-compose) once into /var/cache/cleanroom/harbor-$HARBOR_VERSION, as
# scripts/harbor-validator.sh does, from PyPI.
#
# Env: N (timing trials per harness, default 3), NV (verdict trials per
#      task and agent, default 1), JOBS (trials at once in the verdict
#      runs, default 1), TIMING_TASK (default wordcount), TASKS (fixture
#      names, default all), ADVERSARIAL (1, cleanroom or 0, default 1), CLEANROOM_BIN
#      (default target/release/cleanroom; a build with `tasks import`),
#      DOCKER_HOST (default the test engine's), HARBOR_TIMEOUT (seconds
#      per harbor command, default 1800), KEEP=1 keeps the work directory
#      (Harbor's jobs, cleanroom's runs, the logs).
# Exit: 0 when the verdicts agree; 1 when they do not (or cleanroom passes
#       an adversarial agent); 2 when a harness could not run.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PODMAN_COMPOSE_VERSION=1.6.0
N=${N:-3}
NV=${NV:-1}
JOBS=${JOBS:-1}
TIMING_TASK=${TIMING_TASK:-wordcount}
ADVERSARIAL=${ADVERSARIAL:-1}
BIN=${CLEANROOM_BIN:-$REPO/target/release/cleanroom}
FIXTURES=$REPO/tests/fixtures/harbor
HARBOR_TIMEOUT=${HARBOR_TIMEOUT:-1800}
export DOCKER_HOST=${DOCKER_HOST:-unix:///run/cleanroom-test/podman.sock}
BASE_REPO=cleanroom/debian-12-minimal

AGENT_NAME=Harbor
# shellcheck source=../agents/_lib/common.sh
source "$REPO/agents/_lib/common.sh"   # find_python; it sets -e, undone here
# shellcheck source=_lib/harbor.sh
source "$REPO/scripts/_lib/harbor.sh"
set +e
log() { echo "harbor-side-by-side.sh: $*" >&2; }
fail() { log "$*"; exit 2; }

started=$(date +%s)
[ "$(id -u)" = 0 ] || fail "needs root (cleanroom's container backend does)"
command -v podman >/dev/null || fail "podman is missing: bash scripts/container-engines.sh start"
[ -x "$BIN" ] || fail "$BIN is missing: cargo build --release --locked, or set CLEANROOM_BIN"
"$BIN" tasks import --help >/dev/null 2>&1 \
    || fail "$BIN has no \`tasks import\` (it predates cleanroom's Harbor tasks): set CLEANROOM_BIN to a newer build"
socket=${DOCKER_HOST#unix://}
[ -S "$socket" ] || fail "no Podman API service at $DOCKER_HOST: bash scripts/container-engines.sh start"
if [ -n "${TASKS:-}" ]; then
    read -r -a tasks <<<"$TASKS"
else
    tasks=()
    for d in "$FIXTURES"/*/; do [ -f "$d/task.toml" ] && tasks+=("$(basename "$d")"); done
fi
[ "${#tasks[@]}" -gt 0 ] || fail "no tasks in $FIXTURES"
for t in "${tasks[@]}" "$TIMING_TASK"; do [ -f "$FIXTURES/$t/task.toml" ] || fail "no task $t in $FIXTURES"; done

# Harbor and podman-compose, installed once.
harbor_venv "podman-compose==$PODMAN_COMPOSE_VERSION" || fail "installing harbor $HARBOR_VERSION failed"
venv=$HARBOR_VENV
PY=$venv/bin/python

WORK=$(mktemp -d /tmp/cleanroom-harbor-sbs.XXXXXX)
MANIFEST=$WORK/manifest.tsv
: >"$MANIFEST"
images_before=$(podman images -q --no-trunc | sort -u)

# What Harbor's runs left in Podman: their compose projects' containers,
# pods, networks and volumes, and the hb__* images they built.
harbor_leftovers() {
    local remove=$1 p kind ids found=0
    local projects
    projects=$(find "$WORK/harbor-jobs" -mindepth 2 -maxdepth 2 -type d -name '*__*' -printf '%f\n' 2>/dev/null \
        | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9_-]/-/g; s/$/__env/')
    for p in $projects; do
        for kind in container pod network volume; do
            case $kind in
                container) ids=$(podman ps -aq --filter "label=io.podman.compose.project=$p") ;;
                pod) ids=$(podman pod ls -q --filter "label=io.podman.compose.project=$p") ;;
                network) ids=$(podman network ls -q --filter "label=io.podman.compose.project=$p") ;;
                volume) ids=$(podman volume ls -q --filter "label=io.podman.compose.project=$p") ;;
            esac
            [ -n "$ids" ] || continue
            found=1
            echo "  $kind(s) of $p: $(echo $ids)"
            [ "$remove" = 1 ] || continue
            case $kind in
                container) echo "$ids" | xargs -r podman rm -f >/dev/null 2>&1 ;;
                pod) echo "$ids" | xargs -r podman pod rm -f >/dev/null 2>&1 ;;
                network) echo "$ids" | xargs -r podman network rm -f >/dev/null 2>&1 ;;
                volume) echo "$ids" | xargs -r podman volume rm -f >/dev/null 2>&1 ;;
            esac
        done
    done
    local id name
    while read -r id name; do
        [ -n "$id" ] || continue
        grep -qx "$id" <<<"$images_before" && continue
        found=1
        echo "  image $name"
        [ "$remove" = 1 ] && podman rmi -f "$id" >/dev/null 2>&1
    done < <(podman images --no-trunc --format '{{.ID}} {{.Repository}}:{{.Tag}}' | grep 'hb__')
    return $found
}

cleanup() {
    if [ -d "$WORK/harbor-jobs" ]; then
        harbor_leftovers 1 >"$WORK/leftovers.txt"
    fi
    if [ "${KEEP:-0}" = 1 ]; then
        log "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

podman_counts() {
    echo "containers $(podman ps -aq | wc -l), pods $(podman pod ls -q | wc -l)," \
         "networks $(podman network ls -q | wc -l), volumes $(podman volume ls -q | wc -l)," \
         "images $(podman images -q | sort -u | wc -l)"
}
podman_before=$(podman_counts)

# Harbor's copy of the tasks, its Compose overlay, and its script agent.
mkdir -p "$WORK/harbor-tasks" "$WORK/harbor-home" "$WORK/py" "$WORK/agents" "$WORK/logs"
for t in "${tasks[@]}"; do
    cp -r "$FIXTURES/$t" "$WORK/harbor-tasks/$t"
    sed -i '/^allow_internet[[:space:]]*=/d' "$WORK/harbor-tasks/$t/task.toml"
done
mkdir -p "$WORK/harbor-timing"
cp -r "$FIXTURES/$TIMING_TASK" "$WORK/harbor-timing/$TIMING_TASK"
sed -i '/^allow_internet[[:space:]]*=/d' "$WORK/harbor-timing/$TIMING_TASK/task.toml"
OVERLAY=$WORK/harbor-overlay.yaml
cat >"$OVERLAY" <<'EOF'
services:
  main:
    init: true
    network_mode: none
    ulimits:
      nofile: {soft: 4096, hard: 4096}
      nproc: {soft: 4096, hard: 4096}
EOF
cat >"$WORK/py/hsbs_agents.py" <<'EOF'
"""A Harbor agent that runs one shell script ($HSBS_AGENT_SCRIPT) in the environment."""
import os
from pathlib import Path

from harbor.agents.base import BaseAgent


class ScriptAgent(BaseAgent):
    @staticmethod
    def name() -> str:
        return "script"

    def version(self) -> str:
        return "1"

    async def setup(self, environment) -> None:
        pass

    async def run(self, instruction, environment, context) -> None:
        script = Path(os.environ["HSBS_AGENT_SCRIPT"])
        await environment.upload_file(script, "/tmp/hsbs-agent.sh")
        result = await environment.exec("bash /tmp/hsbs-agent.sh", timeout_sec=600)
        (self.logs_dir / "script.txt").write_text(
            f"exit {result.return_code}\n{result.stdout or ''}{result.stderr or ''}"
        )
EOF
cat >"$WORK/agents/replant-reward.sh" <<'EOF'
#!/bin/bash
# Adversarial: a detached process keeps /logs/verifier/reward.json (which
# Harbor reads before reward.txt) at {"reward": 1}; nothing is solved.
setsid nohup bash -c 'while :; do mkdir -p /logs/verifier
    echo "{\"reward\": 1}" > /logs/verifier/reward.json 2>/dev/null; sleep 0.05; done' \
    >/dev/null 2>&1 </dev/null &
sleep 1
echo "replant-reward: started"
EOF
adversaries=()
if [ "$ADVERSARIAL" != 0 ]; then
    adversaries=("plant-outputs=$REPO/tests/fixtures/agents/plant-outputs.sh"
                 "replant-reward=$WORK/agents/replant-reward.sh")
fi

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
# manifest: phase harness kind dir wall_s rc agent_label(harbor only)
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$MANIFEST"; }

# harbor_job PHASE JOB_NAME AGENT_LABEL TASK_PATH TRIALS CONCURRENCY AGENT_SCRIPT
harbor_job() {
    local phase=$1 job=$2 label=$3 path=$4 k=$5 n=$6 script=$7 agent t0 rc
    agent=$label
    [ -n "$script" ] && agent=hsbs_agents:ScriptAgent
    log "harbor: $label on $(basename "$path"), $k trial(s) each, $n at once"
    t0=$(now)
    env HOME="$WORK/harbor-home" HARBOR_TELEMETRY=0 PATH="$venv/bin:$PATH" PYTHONPATH="$WORK/py" \
        PODMAN_COMPOSE_PROVIDER="$venv/bin/podman-compose" HSBS_AGENT_SCRIPT="$script" \
        timeout -k 60 "$HARBOR_TIMEOUT" "$venv/bin/harbor" run -e podman -a "$agent" -p "$path" \
        --extra-docker-compose "$OVERLAY" -o "$WORK/harbor-jobs" --job-name "$job" -k "$k" -n "$n" -y -q \
        >"$WORK/logs/harbor-$job.log" 2>&1
    rc=$?
    record "$phase" harbor harbor "$WORK/harbor-jobs/$job" "$(since "$t0")" "$rc" "$label"
    [ "$rc" = 0 ] || log "harbor $job: exit $rc ($(tail -1 "$WORK/logs/harbor-$job.log"))"
}

# cleanroom_run PHASE BACKEND NAME ARGS...
cleanroom_run() {
    local phase=$1 backend=$2 name=$3 t0 rc
    shift 3
    log "cleanroom --backend $backend: $name"
    t0=$(now)
    "$BIN" run --tasks "$FIXTURES" --backend "$backend" --out "$WORK/cleanroom-$name" "$@" \
        >"$WORK/logs/cleanroom-$name.log" 2>&1
    rc=$?
    record "$phase" "cleanroom-$backend" cleanroom "$WORK/cleanroom-$name" "$(since "$t0")" "$rc" ""
    [ "$rc" = 0 ] || log "cleanroom $name: exit $rc ($(tail -1 "$WORK/logs/cleanroom-$name.log"))"
}

task_args=()
for t in "${tasks[@]}"; do task_args+=(--task "$t"); done
agent_args=(--agent oracle --agent nop)
for a in "${adversaries[@]}"; do agent_args+=(--agent "script:${a#*=}"); done

echo "== Harbor $HARBOR_VERSION (podman-compose $PODMAN_COMPOSE_VERSION, $(podman --version)) and cleanroom ($BIN)," \
     "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Podman before: $podman_before"

# 1. Verdicts. cleanroom's container run first: it imports the base image.
cleanroom_run verdicts container verdicts-container "${task_args[@]}" "${agent_args[@]}" --trials "$NV" --jobs "$JOBS"
podman image exists "$BASE_REPO:latest" || fail "cleanroom imported no $BASE_REPO:latest: Harbor cannot build the tasks"
cleanroom_run verdicts sandbox verdicts-sandbox "${task_args[@]}" "${agent_args[@]}" --trials "$NV" --jobs "$JOBS"
harbor_job verdicts verdicts-oracle oracle "$WORK/harbor-tasks" "$NV" "$JOBS" ""
harbor_job verdicts verdicts-nop nop "$WORK/harbor-tasks" "$NV" "$JOBS" ""
if [ "$ADVERSARIAL" = 1 ]; then
    for a in "${adversaries[@]}"; do
        harbor_job verdicts "verdicts-${a%%=*}" "${a%%=*}" "$WORK/harbor-tasks" "$NV" "$JOBS" "${a#*=}"
    done
fi

# 2. Time per trial, one trial at a time, everything warm.
if [ "$N" -gt 0 ]; then
    harbor_job timing timing oracle "$WORK/harbor-timing/$TIMING_TASK" "$N" 1 ""
    cleanroom_run timing container timing-container --task "$TIMING_TASK" --agent oracle --trials "$N" --jobs 1
    cleanroom_run timing sandbox timing-sandbox --task "$TIMING_TASK" --agent oracle --trials "$N" --jobs 1
fi

# What Harbor left, removed; Podman's state after.
harbor_leftovers 1 >"$WORK/leftovers.txt"
leftovers=$?

"$PY" - "$MANIFEST" "$N" "$NV" "$TIMING_TASK" "${tasks[*]}" "$ADVERSARIAL" <<'EOF'
import json, statistics, sys
from datetime import datetime
from pathlib import Path

manifest, n, nv, timing_task, tasks, adversarial = sys.argv[1:7]
n, nv, tasks = int(n), int(nv), tasks.split()
HARNESSES = ["harbor", "cleanroom-container", "cleanroom-sandbox"]
CORE = ["oracle", "nop"]
ADV = ["plant-outputs", "replant-reward"] if adversarial != "0" else []
status = 0

def secs(a, b):
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() if a and b else None

def harbor_trials(job, label):
    for res in sorted(Path(job).glob("*/result.json")):
        r = json.loads(res.read_text())
        rewards = (r.get("verifier_result") or {}).get("rewards") or {}
        exc = (r.get("exception_info") or {}).get("exception_type")
        if "reward" in rewards:
            verdict = "pass" if float(rewards["reward"]) >= 1 else "fail"
        else:
            verdict = "error:" + (exc or "no reward")
        ph = lambda k: secs((r.get(k) or {}).get("started_at"), (r.get(k) or {}).get("finished_at"))
        agent = (ph("agent_setup") or 0) + (ph("agent_execution") or 0)
        yield dict(task=r["task_name"], agent=label, verdict=verdict,
                   total=secs(r.get("started_at"), r.get("finished_at")),
                   env=ph("environment_setup"), agent_s=agent, verify=ph("verifier"))

def cleanroom_trials(out):
    for res in sorted(Path(out).glob("*/trials/*/*/*/result.json")):
        r = json.loads(res.read_text())
        spec = r["agent"]
        label = Path(spec[7:]).stem if spec.startswith("script:") else spec
        o = r.get("outcome")
        verdict = {"passed": "pass", "failed": "fail", "skipped": "skip"}.get(o, f"error:{o}/{r.get('class')}")
        t = r.get("timings") or {}
        yield dict(task=r["task"], agent=label, verdict=verdict,
                   total=secs(r.get("started_at"), r.get("finished_at")),
                   env=t.get("environment"), agent_s=t.get("agent"), verify=t.get("verify"))

rows = {}      # (phase, harness) -> list of trials
walls = {}     # (phase, harness) -> [wall seconds, commands]
failed_cmds = []
for line in Path(manifest).read_text().splitlines():
    phase, harness, kind, d, wall, rc, label = line.split("\t")
    trials = list(harbor_trials(d, label) if kind == "harbor" else cleanroom_trials(d))
    if rc != "0" or not trials:
        failed_cmds.append(f"{harness} {Path(d).name}: exit {rc}, {len(trials)} result(s)")
    rows.setdefault((phase, harness), []).extend(trials)
    w = walls.setdefault((phase, harness), [0.0, 0])
    w[0] += float(wall); w[1] += 1

def verdict_of(trials):
    vs = sorted(t["verdict"] for t in trials)
    if not vs:
        return "missing"
    if len(set(vs)) == 1:
        return vs[0] if len(vs) == 1 else f"{vs[0]} x{len(vs)}"
    return "mixed(" + ",".join(vs) + ")"

print(f"\n== verdicts: {len(tasks)} task(s) x agents, {nv} trial(s) each (pass: reward 1 / outcome passed)")
print(f"{'task':<14} {'agent':<15} {'expected':<9} " + " ".join(f"{h:<20}" for h in HARNESSES) + " agree")
for agent in CORE + ADV:
    for task in tasks:
        got = {}
        for h in HARNESSES:
            got[h] = verdict_of([t for t in rows.get(("verdicts", h), []) if t["task"] == task and t["agent"] == agent])
        expected = "pass" if agent == "oracle" else "fail"
        base = lambda v: v.split(" x")[0]
        # The sandbox skips a task whose Dockerfile builds its environment.
        allowed = lambda h: {expected, "skip"} if h == "cleanroom-sandbox" else {expected}
        if agent in CORE:
            ok = all(base(v) in allowed(h) for h, v in got.items())
            mark = "yes" if ok else "NO"
            if not ok:
                status = max(status, 1)
        else:
            cr_ok = all(base(got[h]) in allowed(h) for h in HARNESSES[1:])
            if not cr_ok:
                status = max(status, 1)
            mark = "(info)" if cr_ok else "NO: cleanroom passed a forged reward"
            if adversarial == "1" and base(got["harbor"]) == "pass":
                mark += " Harbor passes it"
        print(f"{task:<14} {agent:<15} {expected:<9} " + " ".join(f"{got[h]:<20}" for h in HARNESSES) + f" {mark}")

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")

if n:
    print(f"\n== time per trial: {timing_task}, oracle, {n} trial(s) per harness, one at a time")
    print("   trial_s: each trial's own record, start to end (median, min, max); env/agent/verify: its phases (median);")
    print("   cmd_s/trial: the command's wall time / trials (the CLI's start included)")
    print(f"{'harness':<21} {'n':>2} {'trial_s':>8} {'min_s':>7} {'max_s':>7} {'env_s':>7} {'agent_s':>8} {'verify_s':>9} {'cmd_s/trial':>12}")
for h in HARNESSES if n else []:
    ts = rows.get(("timing", h), [])
    tot = [t["total"] for t in ts if t["total"] is not None]
    w = walls.get(("timing", h), [float("nan"), 1])
    bad = [t["verdict"] for t in ts if t["verdict"] != "pass"]
    print(f"{h:<21} {len(ts):>2} {med(tot):>8.3f} {min(tot, default=float('nan')):>7.3f} {max(tot, default=float('nan')):>7.3f}"
          f" {med(t['env'] for t in ts):>7.3f} {med(t['agent_s'] for t in ts):>8.3f} {med(t['verify'] for t in ts):>9.3f}"
          f" {w[0] / max(len(ts), 1):>12.3f}" + (f"  (not all passed: {bad})" if bad else ""))
    if len(ts) != n:
        failed_cmds.append(f"{h} timing: {len(ts)} of {n} trials")

if failed_cmds:
    print("\nharness runs that did not complete:")
    for f in failed_cmds:
        print("  " + f)
    status = 2
sys.exit(status)
EOF
status=$?

echo
if [ "$leftovers" = 1 ]; then
    echo "Harbor left in Podman (now removed):"
    cat "$WORK/leftovers.txt"
else
    echo "Harbor left nothing in Podman (containers, pods, networks, volumes of its projects; hb__* images)"
fi
echo "Podman before: $podman_before"
echo "Podman after:  $(podman_counts)"
[ "${KEEP:-0}" = 1 ] && echo "work directory (Harbor's jobs, cleanroom's runs, logs): $WORK"
echo "end to end: $(( $(date +%s) - started )) s; exit $status"
exit $status
