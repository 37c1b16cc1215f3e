#!/bin/bash
# Install the Codex CLI into PREFIX. Usage: install.sh PREFIX
#   PREFIX e.g. /var/lib/cleanroom/agents/codex-0.171.0
# The npm package @openai/codex is a small Node wrapper (bin/codex.js) whose
# optional dependency @openai/codex-linux-x64 carries the real program: a
# static-pie musl Rust binary (vendor/x86_64-unknown-linux-musl/bin/codex) plus
# a static rg. Static means it needs nothing from the environment, not even
# glibc, so no Node.js is carried: the launcher execs the binary directly.
# Host needs: npm, registry access.
set -euo pipefail
AGENT_NAME=codex
VERSION=0.171.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../_lib/common.sh"

PREFIX=${1:?usage: install.sh PREFIX}
[ "$(uname -m)" = x86_64 ] || die "only x86_64 is handled (x86_64-unknown-linux-musl)"
need npm
stamp="$AGENT_NAME $VERSION $(cat "$0" "$here/../_lib/common.sh" | sha256sum | cut -c1-16)"
begin_install "$PREFIX" "$stamp" || exit 0

cache=$(mktemp -d); trap 'rm -rf "$cache"' EXIT
# The wrapper and its platform package (an npm alias of @openai/codex@VERSION-linux-x64);
# npm checks each tarball's sha512 against the registry. No install scripts exist or run.
npm install --prefix "$PREFIX/npm" --cache "$cache" --ignore-scripts --no-audit --no-fund \
    --no-update-notifier "@openai/codex@$VERSION" >&2
vendor="$PREFIX/npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl"
[ -x "$vendor/bin/codex" ] || die "no binary at $vendor/bin/codex"
file -b "$vendor/bin/codex" 2>/dev/null | grep -q 'static' || log "warning: codex binary is not static"
# The optional voice helper carries its own libs with $ORIGIN runpaths; this
# only bundles what it would still take from the host (expected: nothing).
bundle_shared_libs "$PREFIX/npm" "$PREFIX/lib"
write_launcher "$PREFIX/bin/codex" "$vendor/bin/codex"
# Smoke test with a throwaway HOME (the tools create dot-dirs there).
chk=$(mktemp -d)
v=$(env -i PATH=/usr/bin:/bin HOME="$chk" "$PREFIX/bin/codex" --version)
case "$v" in *"$VERSION"*) ;; *) die "unexpected --version output: $v";; esac
rm -rf "$chk"
finish_install "$PREFIX" "$stamp"
