#!/bin/bash
# Install OpenHands (openhands-ai, the V0 headless CLI `python -m
# openhands.core.main`) into PREFIX with its own Python. Usage: install.sh PREFIX
#   PREFIX e.g. /var/lib/cleanroom/agents/openhands-1.6.0
# Version choice (see /work/notes/agents-research.md):
#  - openhands-ai 0.8.3-0.9.8 are the only releases that accept Python 3.11, and
#    they have no local runtime at all (only eventstream=docker, e2b, remote);
#  - 0.10 .. 1.6.0 need Python >= 3.12 and have RUNTIME=local and RUNTIME=cli;
#  - from 1.7.0 on, openhands-ai is only the web app server (V1): the headless
#    CLI moved to the separate `openhands` / openhands-sdk packages.
# So: 1.6.0 on CPython 3.12 (the distribution's where it has one, as Ubuntu
# 24.04 does, else pyenv's or CLEANROOM_PYTHON_SRC: see find_python in
# ../_lib/common.sh).
# Host needs: that Python, patchelf, PyPI access.
set -euo pipefail
AGENT_NAME=openhands
VERSION=1.6.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../_lib/common.sh"

PREFIX=${1:?usage: install.sh PREFIX}
stamp="$AGENT_NAME $VERSION $(cat "$0" "$here/constraints.txt" "$here/../_lib/common.sh" | sha256sum | cut -c1-16)"
begin_install "$PREFIX" "$stamp" || exit 0

python=$(find_python 3.12)
make_python_runtime "$python" "$PREFIX/python"
prefix_pip "$PREFIX/python/bin/python3" -c "$here/constraints.txt" "openhands-ai==$VERSION"
bundle_shared_libs "$PREFIX/python" "$PREFIX/python/lib"
"$PREFIX/python/bin/python3" -m compileall -q -j 2 "$PREFIX/python" >/dev/null || true
"$PREFIX/python/bin/python3" -m pip freeze --all >"$PREFIX/freeze.txt"

write_launcher "$PREFIX/bin/openhands-headless" "$PREFIX/python/bin/python3" -m openhands.core.main
# Smoke test with a throwaway HOME (the tools create dot-dirs there).
chk=$(mktemp -d)
env -i PATH=/usr/bin:/bin HOME="$chk" "$PREFIX/bin/openhands-headless" --help >/dev/null
rm -rf "$chk"
finish_install "$PREFIX" "$stamp"
