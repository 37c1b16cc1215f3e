#!/bin/bash
# Install mini-swe-agent into PREFIX with its own Python (see ../_lib/common.sh
# for the layout rules). Usage: install.sh PREFIX
#   PREFIX e.g. /var/lib/cleanroom/agents/mini-swe-agent-2.4.6
# Host needs: a CPython 3.11 or 3.12 (the distribution's, pyenv's or
# CLEANROOM_PYTHON_SRC: see find_python in ../_lib/common.sh), patchelf,
# PyPI access.
# Result: PREFIX/bin/mini (launcher), PREFIX/python (runtime + site-packages).
set -euo pipefail
AGENT_NAME=mini-swe-agent
VERSION=2.4.6
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../_lib/common.sh"

PREFIX=${1:?usage: install.sh PREFIX}
# The stamp changes whenever the recipe or its pins change -> reinstall.
stamp="$AGENT_NAME $VERSION $(cat "$0" "$here/constraints.txt" "$here/../_lib/common.sh" | sha256sum | cut -c1-16)"
begin_install "$PREFIX" "$stamp" || exit 0

# The pins in constraints.txt have wheels for both.
python=$(find_python 3.11 3.12)
make_python_runtime "$python" "$PREFIX/python"
# constraints.txt pins the whole dependency set verified to install and run
# (litellm, openai, pydantic, ...), so a reinstall gets the same tree.
prefix_pip "$PREFIX/python/bin/python3" -c "$here/constraints.txt" "mini-swe-agent==$VERSION"
bundle_shared_libs "$PREFIX/python" "$PREFIX/python/lib"
# Compile everything now: the prefix is read-only inside the environment.
"$PREFIX/python/bin/python3" -m compileall -q -j 2 "$PREFIX/python" >/dev/null || true
"$PREFIX/python/bin/python3" -m pip freeze --all >"$PREFIX/freeze.txt"

# 'mini' is the pip console script (absolute shebang into PREFIX/python).
write_launcher "$PREFIX/bin/mini" "$PREFIX/python/bin/mini"
# (mini creates its global config dir on import: point it at a throwaway one)
cfg=$(mktemp -d); env -i PATH=/usr/bin:/bin HOME="$cfg" MSWEA_GLOBAL_CONFIG_DIR="$cfg" \
    "$PREFIX/bin/mini" --help >/dev/null </dev/null; rm -rf "$cfg"
finish_install "$PREFIX" "$stamp"
