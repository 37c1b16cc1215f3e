#!/bin/bash
# Start Claude Code headless inside the environment (run as: bash run.sh).
# Dialect: Anthropic Messages, POST $BASE/v1/messages?beta=true with
# "stream": true (SSE). Trajectory: $CLEANROOM_LOG_DIR/stream.jsonl (stdout of
# --output-format stream-json: one JSON event per line) plus the session
# transcript under $CLEANROOM_LOG_DIR/claude/projects/*/<session>.jsonl.
# The Bash tool inherits this process's environment, so only what is needed is set.
# IS_SANDBOX=1: lets root use --dangerously-skip-permissions. ENABLE_TOOL_SEARCH=false
# and CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1 keep requests to plain Messages
# features (no defer_loading tools, no context_management) that a translating
# forwarder can serve.
set -euo pipefail
P=$CLEANROOM_AGENT_PREFIX
M=$CLEANROOM_MODEL
cd "$CLEANROOM_WORKDIR"
args=(-p --output-format stream-json --verbose --model "$M"
      --dangerously-skip-permissions --no-chrome)
[ -z "${CLEANROOM_MAX_STEPS:-}" ] || args+=(--max-turns "$CLEANROOM_MAX_STEPS")
# --gate advisory|enforced: a Stop hook asks cleanroom's gate (through the
# forwarder) whether to stop; "block" feeds the gate's report back (exit 2).
case "${CLEANROOM_GATE:-off}" in
advisory | enforced)
    hook=$CLEANROOM_LOG_DIR/gate-hook.sh
    cat >"$hook" <<'HOOK'
port=${ANTHROPIC_BASE_URL##*:}
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 0
printf 'POST /cleanroom/gate HTTP/1.1\r\nHost: gate\r\nx-api-key: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$ANTHROPIC_API_KEY" >&3
answer=$(cat <&3)
body=${answer#*$'\r\n\r\n'}
if [ "${body%%$'\n'*}" = block ]; then
    printf '%s\n' "${body#*$'\n'}" >&2
    exit 2
fi
exit 0
HOOK
    args+=(--settings "{\"hooks\":{\"Stop\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"bash $hook\",\"timeout\":86400}]}]}}")
    ;;
esac
exec env -i \
    PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}" \
    HOME="${HOME:-/root}" LANG=C.UTF-8 SHELL=/bin/bash \
    IS_SANDBOX=1 \
    ENABLE_TOOL_SEARCH=false CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1 \
    ANTHROPIC_BASE_URL="$CLEANROOM_MODEL_BASE_URL" \
    ANTHROPIC_API_KEY="$CLEANROOM_MODEL_TOKEN" \
    ANTHROPIC_MODEL="$M" ANTHROPIC_SMALL_FAST_MODEL="$M" CLAUDE_CODE_SUBAGENT_MODEL="$M" \
    ANTHROPIC_DEFAULT_HAIKU_MODEL="$M" ANTHROPIC_DEFAULT_SONNET_MODEL="$M" ANTHROPIC_DEFAULT_OPUS_MODEL="$M" \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
    DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1 \
    CLAUDE_CONFIG_DIR="$CLEANROOM_LOG_DIR/claude" \
    "$P/bin/claude" "${args[@]}" <"$CLEANROOM_INSTRUCTION_FILE" >"$CLEANROOM_LOG_DIR/stream.jsonl"
