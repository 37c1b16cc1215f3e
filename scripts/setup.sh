#!/usr/bin/env bash
# Installs what cleanroom needs on a Debian or Ubuntu host (run as root):
# the sandbox's tools (bubblewrap, slirp4netns, e2fsprogs, iproute2,
# util-linux), QEMU for the vm backend (qemu-system-x86, qemu-utils),
# OpenSSH's client for the ssh backend (and iptables for its test hosts),
# debootstrap for base images (mmdebstrap and uidmap for the rootless
# sandbox's, docs/rootless.md), git for git artifacts, and a C
# compiler for the Rust build, and patchelf for installing external agent
# CLIs into self-contained prefixes. Rust itself comes from rustup.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: run as root (the sandbox uses namespaces, cgroups and loop mounts)" >&2
  exit 2
fi
packages=(bubblewrap slirp4netns debootstrap mmdebstrap uidmap e2fsprogs iproute2 util-linux mount git ca-certificates gcc libc6-dev patchelf
  qemu-system-x86 qemu-utils openssh-client iptables)
not_installed() {
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
# Twice: installing one package can remove another (Debian's
# qemu-system-x86 takes out a newer qemu-utils from backports), which the
# second round puts back at the version that fits.
for round in 1 2; do
  mapfile -t missing < <(not_installed)
  [ ${#missing[@]} -eq 0 ] && break
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  [ "$round" = 1 ] && apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
done
mapfile -t missing < <(not_installed)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: ${missing[*]} would not stay installed (apt removed it for another package): install it by hand" >&2
  exit 1
fi
if ! command -v cargo >/dev/null; then
  echo "setup.sh: cargo not found: install a current Rust toolchain (https://rustup.rs) and rerun" >&2
  exit 2
fi
# The sandbox needs the memory and pids cgroup controllers and loop devices.
modprobe loop 2>/dev/null || true
# The rootless sandbox's NAT (slirp4netns, run by the user) opens the TUN
# device, which Debian's udev rules leave open to everyone (0666); a host
# without udev may have left it root's alone. Opening it gives no power
# by itself: making a device takes CAP_NET_ADMIN in a network namespace.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  chmod 0666 /dev/net/tun
fi
echo "setup.sh: ready"
