#!/bin/bash
# Install Claude Code into PREFIX. Usage: install.sh PREFIX
#   PREFIX e.g. /var/lib/cleanroom/agents/claude-code-2.1.332
# Since 2.x the npm package @anthropic-ai/claude-code is only a wrapper whose
# postinstall copies a platform package's binary into place; the real program
# is one self-contained executable (Bun-compiled, ~400 MB) in
# @anthropic-ai/claude-code-linux-x64 that needs nothing but glibc (libc, libm,
# libpthread, libdl, librt). So no Node.js is carried: we install the platform
# package with the host's npm (which checks the registry's sha512) and point a
# launcher at the binary. Host needs: npm, registry access.
set -euo pipefail
AGENT_NAME=claude-code
VERSION=2.1.332
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../_lib/common.sh"

PREFIX=${1:?usage: install.sh PREFIX}
[ "$(uname -m)" = x86_64 ] || die "only x86_64 is handled (platform package linux-x64)"
need npm
stamp="$AGENT_NAME $VERSION $(cat "$0" "$here/../_lib/common.sh" | sha256sum | cut -c1-16)"
begin_install "$PREFIX" "$stamp" || exit 0

# --ignore-scripts: the platform package has none, and nothing may run at
# install time; --no-save etc. keep npm from writing outside PREFIX/npm
# (its cache lives in a throwaway dir).
cache=$(mktemp -d); trap 'rm -rf "$cache"' EXIT
npm install --prefix "$PREFIX/npm" --cache "$cache" --ignore-scripts --no-audit --no-fund \
    --no-update-notifier "@anthropic-ai/claude-code-linux-x64@$VERSION" >&2
bin="$PREFIX/npm/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
[ -x "$bin" ] || die "no binary at $bin"
bundle_shared_libs "$PREFIX/npm" "$PREFIX/lib"   # expected to find nothing beyond glibc
write_launcher "$PREFIX/bin/claude" "$bin"
# Smoke test with a throwaway HOME (the tools create dot-dirs there).
chk=$(mktemp -d)
v=$(env -i PATH=/usr/bin:/bin HOME="$chk" "$PREFIX/bin/claude" --version)
case "$v" in "$VERSION "*) ;; *) die "unexpected --version output: $v";; esac
rm -rf "$chk"
finish_install "$PREFIX" "$stamp"
