#!/bin/bash
# Start mini-swe-agent inside the environment (run as: bash run.sh).
# Dialect: OpenAI chat completions (via litellm, provider "openai/"), bash tool
# calls, non-streaming. Trajectory: $CLEANROOM_LOG_DIR/traj.json, rewritten
# after every step. Commands run through /bin/sh with the agent's environment,
# so only harmless variables are given to the agent process.
set -euo pipefail
P=$CLEANROOM_AGENT_PREFIX
cd "$CLEANROOM_WORKDIR"
# Its default configuration, wherever the runtime's Python version put it.
config=("$P"/python/lib/python3.*/site-packages/minisweagent/config/mini.yaml)
args=(
    --agent-class default --environment-class local --exit-immediately
    -c "${config[0]}"
    -c "model.model_kwargs.api_base=$CLEANROOM_MODEL_BASE_URL/v1"
    -c model.cost_tracking=ignore_errors   # unknown model: no price, cost stays 0
    -c agent.cost_limit=0                  # so cost cannot limit; steps do
    -c "agent.step_limit=${CLEANROOM_MAX_STEPS:-0}"
    -c "environment.timeout=${CLEANROOM_COMMAND_TIMEOUT:-1800}"  # per command (default 30 s is too short for builds)
    -m "openai/$CLEANROOM_MODEL"
    -o "$CLEANROOM_LOG_DIR/traj.json"
    -t "$(cat "$CLEANROOM_INSTRUCTION_FILE")"
)
launch=("$P/bin/mini")
# Started again by the completion gate: mini-swe-agent has no resume of its
# own, so its default agent is handed the conversation it saved (traj.json)
# in place of a fresh one, with the gate's report as the next message. The
# launcher's directory is on sys.path by Python's rule, not by PYTHONPATH,
# which the agent's commands would inherit.
if [ -n "${CLEANROOM_RESUME_FILE:-}" ]; then
    launcher=$CLEANROOM_LOG_DIR/mini-resume.py
    cat >"$launcher" <<'PY'
import json
import sys

from minisweagent.agents.default import DefaultAgent
from minisweagent.run.mini import app

SAVED, REPORT = sys.argv.pop(1), sys.argv.pop(1)


class ResumingAgent(DefaultAgent):
    resumed = False

    def add_messages(self, *messages):
        if not self.resumed:
            self.resumed = True
            with open(SAVED) as f:
                prior = [m for m in json.load(f)["messages"] if m.get("role") != "exit"]
            with open(REPORT) as f:
                messages = (*prior, self.model.format_message(role="user", content=f.read()))
        return super().add_messages(*messages)


sys.exit(app())
PY
    launch=("$P/python/bin/python3" "$launcher" "$CLEANROOM_LOG_DIR/traj.json" "$CLEANROOM_RESUME_FILE")
    args[1]=__main__.ResumingAgent
fi
exec env -i \
    PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}" \
    HOME="${HOME:-/root}" LANG=C.UTF-8 TERM=dumb \
    OPENAI_API_KEY="$CLEANROOM_MODEL_TOKEN" \
    MSWEA_CONFIGURED=true MSWEA_SILENT_STARTUP=1 \
    MSWEA_GLOBAL_CONFIG_DIR="$CLEANROOM_LOG_DIR/mini-config" \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    "${launch[@]}" "${args[@]}"
