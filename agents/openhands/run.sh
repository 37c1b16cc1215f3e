#!/bin/bash
# Start OpenHands (V0 headless, CodeActAgent) inside the environment (bash run.sh).
# RUNTIME=cli: every command is `bash -c` in a subprocess of this process
# (RUNTIME=local would need tmux + jupyter and leaks PATH/PYTHONPATH of the
# prefix into the agent's shell, see notes). Dialect: OpenAI chat completions
# via litellm ("openai/" provider), native tool calling, non-streaming.
# Trajectory: $CLEANROOM_LOG_DIR/trajectory.json (SAVE_TRAJECTORY_PATH), event
# store under $CLEANROOM_LOG_DIR/openhands/, log lines on stdout/stderr.
# Settings go in a config file, not the environment, because the CLI runtime
# hands its own environment to every command.
set -euo pipefail
P=$CLEANROOM_AGENT_PREFIX
L=$CLEANROOM_LOG_DIR
mkdir -p "$L/openhands"
touch "$L/openhands/config.toml"; chmod 600 "$L/openhands/config.toml"  # holds the token
cat >"$L/openhands/config.toml" <<TOML
[core]
runtime = "cli"
workspace_base = "$CLEANROOM_WORKDIR"
save_trajectory_path = "$L/trajectory.json"
file_store = "local"
file_store_path = "$L/openhands/store"
enable_browser = false
max_iterations = ${CLEANROOM_MAX_STEPS:-500}

[llm]
model = "openai/$CLEANROOM_MODEL"
base_url = "$CLEANROOM_MODEL_BASE_URL/v1"
api_key = "$CLEANROOM_MODEL_TOKEN"
native_tool_calling = true
num_retries = 5
drop_params = true

[agent]
enable_browsing = false
enable_jupyter = false
enable_mcp = false

[sandbox]
timeout = 1800
TOML
# Sessions are named, so that a restart by the completion gate finds the
# session the previous run saved in the file store (its id hashes the name
# with the store's own secret) and goes on from it, the gate's report as the
# new user message. A session that ended in an error (a loop OpenHands
# detected, say) cannot go on: restored headless, its history trips the same
# check at once, and OpenHands would drop the message. Such a run is followed
# by a new session, whose instruction tells what happened before.
session=cleanroom-1
task=$CLEANROOM_INSTRUCTION_FILE
if [ -n "${CLEANROOM_RESUME_FILE:-}" ]; then
    session=$(cat "$L/openhands/session")
    events=$(echo "$L/openhands/store/sessions/$session"-*/events)
    last=$(cd "$events" 2>/dev/null && grep -l '"agent_state_changed"' -- *.json | sort -n | tail -1) || true
    if [ -n "$last" ] && ! grep -q '"agent_state": "error"' "$events/$last"; then
        task=$CLEANROOM_RESUME_FILE
    else
        session=cleanroom-$CLEANROOM_RUN
    fi
fi
echo "$session" >"$L/openhands/session"
cd "$CLEANROOM_WORKDIR"
exec env -i \
    PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}" \
    HOME="${HOME:-/root}" LANG=C.UTF-8 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$P/bin/openhands-headless" --config-file "$L/openhands/config.toml" \
    -c CodeActAgent -n "$session" -f "$task"
