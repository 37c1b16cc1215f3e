#!/usr/bin/env bash
# Validates ATIF trajectory files with Harbor's own validator
# (`python -m harbor.utils.trajectory_validator`, PyPI package harbor,
# which needs CPython 3.12 or newer), as peer tools read them.
# Installs it once (scripts/_lib/harbor.sh: /var/cache/cleanroom/harbor-0.26.0).
# Exits non-zero if a file is invalid.
# Usage: scripts/harbor-validator.sh FILE...
set -euo pipefail
AGENT_NAME="Harbor's trajectory validator"
# shellcheck source=../agents/_lib/common.sh
source "$(dirname "$0")/../agents/_lib/common.sh"
# shellcheck source=_lib/harbor.sh
source "$(dirname "$0")/_lib/harbor.sh"
harbor_venv
status=0
for file in "$@"; do
  "$HARBOR_VENV/bin/python" -m harbor.utils.trajectory_validator "$file" || status=1
done
exit $status
