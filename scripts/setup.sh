#!/usr/bin/env bash
# Installs what cleanroom needs on a Debian or Ubuntu host (run as root):
# the sandbox's tools (bubblewrap, slirp4netns, e2fsprogs, iproute2,
# util-linux), QEMU for the vm backend (qemu-system-x86, qemu-utils),
# OpenSSH's client for the ssh backend (and iptables for its test hosts),
# debootstrap for base images, git for git artifacts, and a C
# compiler for the Rust build, and patchelf for installing external agent
# CLIs into self-contained prefixes. Rust itself comes from rustup.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: run as root (the sandbox uses namespaces, cgroups and loop mounts)" >&2
  exit 2
fi
packages=(bubblewrap slirp4netns debootstrap e2fsprogs iproute2 util-linux mount git ca-certificates gcc libc6-dev patchelf
  qemu-system-x86 qemu-utils openssh-client iptables)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null; then
  echo "setup.sh: cargo not found: install a current Rust toolchain (https://rustup.rs) and rerun" >&2
  exit 2
fi
# The sandbox needs the memory and pids cgroup controllers and loop devices.
modprobe loop 2>/dev/null || true
echo "setup.sh: ready"
