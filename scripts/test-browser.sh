#!/usr/bin/env bash
# Installs the real browser that the viewer's tests drive (run as root):
# Debian's Chromium and its ChromeDriver (packages chromium and
# chromium-driver, /usr/bin/chromium and /usr/bin/chromedriver). Ubuntu
# ships Chromium only as a snap, which does not run headless in
# containers: there, install Google's Chrome and ChromeDriver by hand and
# link them to those paths.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "test-browser.sh: run as root" >&2
  exit 2
fi
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ! apt-get install -y -qq chromium chromium-driver >/dev/null; then
  echo "test-browser.sh: Debian's chromium and chromium-driver would not install (see the note at the top of this script)" >&2
  exit 1
fi
echo "test-browser.sh: $(/usr/bin/chromium --version)"
