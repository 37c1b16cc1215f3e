#!/bin/bash
# Start Codex headless inside the environment (run as: bash run.sh).
# Dialect: OpenAI Responses API only (POST $BASE/v1/responses, "stream": true,
# SSE); wire_api="chat" was removed from Codex. Trajectory: exec --json events
# on stdout -> $CLEANROOM_LOG_DIR/events.jsonl; full rollout under
# $CLEANROOM_LOG_DIR/codex/sessions/YYYY/MM/DD/rollout-*.jsonl.
# Codex has no step limit: CLEANROOM_MAX_STEPS must be enforced by the harness
# (forwarder request count or timeout).
set -euo pipefail
P=$CLEANROOM_AGENT_PREFIX
mkdir -p "$CLEANROOM_LOG_DIR/codex"
args=(exec --json --skip-git-repo-check --ignore-rules --color never
      --dangerously-bypass-approvals-and-sandbox  # the environment is the sandbox; bwrap/landlock inside it would fail
      -C "$CLEANROOM_WORKDIR" -m "$CLEANROOM_MODEL"
      -c model_provider=cleanroom
      -c "model_providers.cleanroom={name=\"cleanroom\", base_url=\"$CLEANROOM_MODEL_BASE_URL/v1\", env_key=\"OPENAI_API_KEY\", wire_api=\"responses\", supports_websockets=false}"
      -c check_for_update_on_startup=false -c analytics.enabled=false -c feedback.enabled=false
      -c 'otel.exporter="none"' -c web_search=\"disabled\"
      -o "$CLEANROOM_LOG_DIR/last-message.txt")
# Started again by the completion gate: resume the session (CODEX_HOME keeps
# it), the gate's report as the next message; otherwise the instruction.
prompt=$CLEANROOM_INSTRUCTION_FILE
if [ -n "${CLEANROOM_RESUME_FILE:-}" ]; then
    args+=(resume --last)
    prompt=$CLEANROOM_RESUME_FILE
fi
args+=(-)
cd "$CLEANROOM_WORKDIR"
exec env -i \
    PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}" \
    HOME="${HOME:-/root}" LANG=C.UTF-8 \
    OPENAI_API_KEY="$CLEANROOM_MODEL_TOKEN" \
    CODEX_HOME="$CLEANROOM_LOG_DIR/codex" \
    "$P/bin/codex" "${args[@]}" <"$prompt" >"$CLEANROOM_LOG_DIR/events.jsonl"
