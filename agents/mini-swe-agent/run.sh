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
exec env -i \
    PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}" \
    HOME="${HOME:-/root}" LANG=C.UTF-8 TERM=dumb \
    OPENAI_API_KEY="$CLEANROOM_MODEL_TOKEN" \
    MSWEA_CONFIGURED=true MSWEA_SILENT_STARTUP=1 \
    MSWEA_GLOBAL_CONFIG_DIR="$CLEANROOM_LOG_DIR/mini-config" \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$P/bin/mini" "${args[@]}"
