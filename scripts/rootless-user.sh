#!/usr/bin/env bash
# Makes sure an ordinary user NAME (default cleanroom-test) exists with a
# home and 65536 subordinate user and group ids, as the rootless sandbox
# needs (docs/rootless.md), and prints "UID GID HOME". Run as root; the
# rootless tests use it, and so can anyone who wants to try the rootless
# sandbox with an account of its own. Nothing else of the host changes,
# but for the TUN device's mode (below).
set -euo pipefail
name=${1:-cleanroom-test}
if [ "$(id -u)" != 0 ]; then
  echo "rootless-user.sh: run as root (it may add a user)" >&2
  exit 2
fi
# Test processes run this at once (one process a test): one at a time.
exec 9>/run/lock/cleanroom-rootless-user.lock
flock 9
if ! id "$name" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash "$name"
fi
# useradd gives subordinate ids where login.defs says so; where it did
# not, the next free range above every one in use.
for file in /etc/subuid /etc/subgid; do
  touch "$file"
  if ! grep -q "^$name:" "$file"; then
    start=$(awk -F: 'BEGIN { top = 100000 } { if ($2 + $3 > top) top = $2 + $3 } END { print top }' "$file")
    flag=--add-subuids
    [ "$file" = /etc/subgid ] && flag=--add-subgids
    usermod "$flag" "$start-$((start + 65535))" "$name"
  fi
done
# slirp4netns, run by the user, opens the TUN device: open to everyone as
# Debian's udev rules make it (a host without udev leaves it root's after
# each boot); opening it gives no power by itself.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  chmod 0666 /dev/net/tun
fi
echo "$(id -u "$name") $(id -g "$name") $(getent passwd "$name" | cut -d: -f6)"
