#!/usr/bin/env bash
# Validates ATIF trajectory files with Harbor's own validator
# (`python -m harbor.utils.trajectory_validator`, PyPI package harbor,
# which needs CPython 3.12 or newer), as peer tools read them.
# Installs it once into /var/cache/cleanroom/harbor-$VERSION (a venv of a
# CPython found as the agents' installers find one: CLEANROOM_PYTHON_SRC,
# /usr/bin, pyenv's, /usr/local/bin). Exits non-zero if a file is invalid.
# Usage: scripts/harbor-validator.sh FILE...
set -euo pipefail
VERSION=0.26.0
venv=/var/cache/cleanroom/harbor-$VERSION
AGENT_NAME="Harbor's trajectory validator"
# shellcheck source=../agents/_lib/common.sh
source "$(dirname "$0")/../agents/_lib/common.sh"
# One installer at a time (tests validate concurrently); the others wait
# and find its venv, complete once the marker is written.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ ! -f "$venv/.installed" ]; then
  python=$(find_python 3.12 3.13)
  rm -rf "$venv" "$venv.tmp"
  env -i PATH=/usr/bin:/bin "$python" -m venv "$venv" >&2
  "$venv/bin/pip" install -q "harbor==$VERSION" >&2
  touch "$venv/.installed"
fi
flock -u 9
status=0
for file in "$@"; do
  "$venv/bin/python" -m harbor.utils.trajectory_validator "$file" || status=1
done
exit $status
