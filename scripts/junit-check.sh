#!/usr/bin/env bash
# Checks JUnit XML files as CI servers read them: valid against Jenkins
# xunit's junit-10.xsd, and parsed by junitparser and by xunitparser with
# counts that add up (scripts/junit-check.py). Installs once into
# /var/cache/cleanroom/junit-check (a venv of a CPython found as the agents'
# installers find one, with both parsers and xmlschema from PyPI, and
# junit-10.xsd out of pytest's sdist, the copy PyPI carries).
# Exits non-zero if a file fails any of them.
# Usage: scripts/junit-check.sh FILE...
set -euo pipefail
PACKAGES=(junitparser==5.0.3 xunitparser==1.3.4 xmlschema==4.3.2)
PYTEST_SDIST="pytest==8.3.5 --hash=sha256:f4efe70cc14e511565ac476b57c279e12a855b11f48f212af1080ef2263d3845"
XSD_IN_SDIST=pytest-8.3.5/testing/example_scripts/junit-10.xsd
XSD_SHA256=a1a816f58d1bf95ebabf371994df0b9246dee66ea9572fbec4f9296f1b2c0ff6
dir=/var/cache/cleanroom/junit-check
AGENT_NAME="The JUnit check"
# shellcheck source=../agents/_lib/common.sh
source "$(dirname "$0")/../agents/_lib/common.sh"
[ $# -gt 0 ] || { echo "usage: scripts/junit-check.sh FILE..." >&2; exit 2; }
# One installer at a time (tests check concurrently); the others wait and
# find its venv, complete once the marker names what this script pins.
pinned="${PACKAGES[*]} $XSD_SHA256"
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$pinned" ]; then
  # junitparser 5 and xmlschema 4 need 3.10 or newer.
  python=$(find_python 3.11 3.12 3.13 3.10)
  rm -rf "$dir"
  env -i PATH=/usr/bin:/bin "$python" -m venv "$dir" >&2
  "$dir/bin/pip" install -q "${PACKAGES[@]}" >&2
  echo "$PYTEST_SDIST" | "$dir/bin/pip" download -q --no-deps --no-binary :all: -d "$dir/sdist" -r /dev/stdin >&2
  tar --no-same-owner -xzf "$dir"/sdist/pytest-*.tar.gz -C "$dir/sdist" "$XSD_IN_SDIST"
  mv "$dir/sdist/$XSD_IN_SDIST" "$dir/junit-10.xsd"
  rm -rf "$dir/sdist"
  echo "$XSD_SHA256  $dir/junit-10.xsd" | sha256sum --check --quiet - >&2 \
    || die "junit-10.xsd in $XSD_IN_SDIST is not the schema this script expects"
  echo "$pinned" >"$dir/.installed"
fi
flock -u 9
exec "$dir/bin/python" "$(dirname "$0")/junit-check.py" "$dir/junit-10.xsd" "$@"
