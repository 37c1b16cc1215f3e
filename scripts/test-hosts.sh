#!/usr/bin/env bash
# Fresh SSH hosts on this machine, for the ssh backend's tests and for
# anyone who wants to try it without machines of their own (run as root).
#
#   scripts/test-hosts.sh up N        N hosts, each a QEMU virtual machine that
#                                     boots Debian 12 the standard way (its own
#                                     kernel and initramfs, systemd, sshd); prints
#                                     a cleanroom configuration that uses them
#                                     (N hosts that are up already are kept)
#   scripts/test-hosts.sh reset NAME  the host back to how it first booted (a
#                                     snapshot of its memory and disk, taken when
#                                     it first answered; its clock set again):
#                                     the configuration's reset command
#   scripts/test-hosts.sh create      one more host, booted afresh (th-101,
#                                     th-102, ...); prints name= and address=
#                                     lines: a provisioner's create command
#   scripts/test-hosts.sh destroy NAME  that host stopped and removed
#   scripts/test-hosts.sh provisioner prints a cleanroom configuration whose
#                                     pool makes hosts with create and destroy
#   scripts/test-hosts.sh down        every host stopped, every trace removed
#   scripts/test-hosts.sh clean       down, and the cached image removed too
#
# Each host is a machine of its own: whatever runs as root inside it reaches
# nothing of this one but the SSH port it is reached on. Its QEMU runs in a
# network namespace of its own whose only ways out are slirp4netns (outbound,
# with this machine's loopback refused and its addresses, networks and
# gateways unroutable, as cleanroom's sandbox does) and a veth pair that
# carries only connections made from this side (to the host's sshd).
#
# The image (Debian 12 from this machine's apt mirror, with its extra CA
# certificates) is built once into $CACHE (a few minutes); the hosts' disks
# are copy-on-write overlays of it under $STATE.
set -euo pipefail

CACHE=/var/cache/cleanroom/test-hosts
STATE=/var/lib/cleanroom-test-hosts
# Changed with every change to what the image holds: an image of another
# recipe is rebuilt.
RECIPE=5
PACKAGES=ca-certificates,systemd-sysv,udev,kmod,e2fsprogs,iproute2,openssh-server
MEMORY_MB=${TEST_HOSTS_MEMORY_MB:-4096}
# One CPU: on a busy 2-core machine a guest's second CPU mostly waits for
# the first (a lock held by a vCPU whose thread is not running is spun
# on). With two hogs on the cores, an oracle and an adversary on the two
# hosts took 121-141 s of QEMU's CPU with 2 CPUs each, 76-80 s with one.
CPUS=${TEST_HOSTS_CPUS:-1}
BOOT_TIMEOUT=${TEST_HOSTS_BOOT_TIMEOUT:-600}
SCRIPT=$(readlink -f "$0")

die() { echo "test-hosts.sh: $*" >&2; exit 2; }
say() { echo "test-hosts.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || die "run as root (network namespaces, QEMU)"

# The n-th host's names and addresses.
ns_of() { echo "cleanroom-th-$1"; }
veth_of() { echo "crth$1"; }
host_ip() { echo "10.254.$1.1"; }
guest_ip() { echo "10.254.$1.2"; }
index_of() {
  case "$1" in
    th-[0-9]*) echo "${1#th-}" ;;
    *) die "no test host named '$1' (they are th-1, th-2, ...)" ;;
  esac
}

# The first Debian mirror of this machine's apt sources (deb822 or one-line).
mirror() {
  local uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }')
  fi
  [ -n "$uri" ] || die "no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d"
  echo "$uri"
}

image_ready() { [ -f "$CACHE/recipe" ] && [ "$(cat "$CACHE/recipe")" = "$RECIPE" ]; }

build_image() {
  image_ready && return 0
  for tool in debootstrap mkfs.ext4 qemu-system-x86_64 qemu-img slirp4netns iptables ssh ssh-keygen unshare; do
    command -v "$tool" >/dev/null || die "$tool not found (packages: debootstrap e2fsprogs qemu-system-x86 qemu-utils slirp4netns iptables openssh-client util-linux)"
  done
  local url root
  url=$(mirror)
  say "building the hosts' image from $url (once, a few minutes)"
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  root="$CACHE/rootfs"
  debootstrap --variant=minbase --include="$PACKAGES" bookworm "$root" "$url" >"$CACHE/build.log" 2>&1 \
    || die "debootstrap failed: see $CACHE/build.log"
  # The initramfs holds what a virtio machine needs to find its disk.
  # (written before the kernel's package: its conffiles are kept as they are).
  mkdir -p "$root/etc/initramfs-tools/conf.d"
  echo "MODULES=list" >"$root/etc/initramfs-tools/conf.d/test-host"
  printf 'virtio_pci\nvirtio_blk\nvirtio_net\n' >"$root/etc/initramfs-tools/modules"
  if [ -d /usr/local/share/ca-certificates ]; then
    cp -rL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # A private mount namespace: its /proc goes when the namespace does, and
  # nothing of this machine's /dev is ever mounted into the tree.
  unshare --mount --fork sh -ec '
    root="$1"
    mount -t proc proc "$root/proc"
    chroot "$root" /usr/sbin/update-ca-certificates >/dev/null
    DEBIAN_FRONTEND=noninteractive chroot "$root" /usr/bin/apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confold linux-image-cloud-amd64
    chroot "$root" /usr/bin/apt-get clean
  ' sh "$root" >>"$CACHE/build.log" 2>&1 || die "installing the kernel failed: see $CACHE/build.log"
  configure_image "$root"
  local version
  version=$(ls "$root/boot" | sed -n 's/^vmlinuz-//p' | head -1)
  [ -n "$version" ] || die "no kernel in the image: see $CACHE/build.log"
  cp "$root/boot/vmlinuz-$version" "$CACHE/vmlinuz"
  cp "$root/boot/initrd.img-$version" "$CACHE/initrd.img"
  cp "$root/etc/ssh/ssh_host_ed25519_key.pub" "$CACHE/host_key.pub"
  mkfs.ext4 -q -F -m 0 -L test-host -E root_owner=0:0 -d "$root" "$CACHE/disk.raw" 12G
  chmod 0444 "$CACHE/disk.raw"
  rm -rf "$root"
  echo "$RECIPE" >"$CACHE/recipe"
  say "image ready in $CACHE"
}

configure_image() {
  local root=$1
  echo "test-host" >"$root/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 test-host\n' >"$root/etc/hosts"
  echo "nameserver 10.0.2.3" >"$root/etc/resolv.conf"
  # The initramfs mounts the root read-write (the kernel's command line)
  # and loads the disk's and the network card's drivers: nothing waits for
  # udev to announce a device.
  : >"$root/etc/fstab"
  # QEMU's user-mode network: a fixed address on the one card (named by the
# initramfs's udev), set once at boot.
  cat >"$root/etc/systemd/system/test-host-network.service" <<'UNIT'
[Unit]
Description=QEMU's user-mode network
Before=network.target ssh.service
Wants=network.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -ec 'ip link set lo up; for d in /sys/class/net/*; do n=$${d##*/}; [ $$n = lo ] || break; done; ip link set $$n up; ip addr add 10.0.2.15/24 dev $$n; ip route add default via 10.0.2.2'

[Install]
WantedBy=multi-user.target
UNIT
  ln -sf /etc/systemd/system/test-host-network.service \
    "$root/etc/systemd/system/multi-user.target.wants/test-host-network.service"
  # Root by key only; the key is this image's, made here.
  ssh-keygen -q -t ed25519 -N "" -C "cleanroom test hosts" -f "$CACHE/id_ed25519"
  mkdir -p -m 0700 "$root/root/.ssh"
  cp "$CACHE/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
  chmod 0600 "$root/root/.ssh/authorized_keys"
  printf 'PasswordAuthentication no\nUseDNS no\nPrintMotd no\nMaxSessions 64\nMaxStartups 64\n' \
    >"$root/etc/ssh/sshd_config.d/test-host.conf"
  # What a boot does for nobody (each second of it counts: a phase ends
  # with a reboot): timers that would take apt's lock while a trial
  # installs, consoles nobody sees, modules nothing here uses, records of
  # logins, udev (the initramfs loaded the two drivers there are); the
  # journal in memory.
  for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer \
    getty@tty1.service getty-static.service serial-getty@ttyS0.service modprobe@loop.service \
    modprobe@dm_mod.service modprobe@fuse.service modprobe@drm.service systemd-random-seed.service \
    systemd-update-utmp.service systemd-update-utmp-runlevel.service systemd-remount-fs.service \
    systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-udev-trigger.service \
    systemd-udev-settle.service; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
  done
  mkdir -p "$root/etc/systemd/journald.conf.d"
  printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/test-host.conf"
}

# Destinations a host must not reach through its NAT: this machine's own
# addresses, the networks its routes name and their gateways, link-local
# ranges (cloud metadata); loopback and slirp4netns's own 10.0.2.0/24 aside.
blocked_destinations() {
  {
    ip -o addr show | awk '{ for (i = 1; i < NF; i++) if ($i == "inet") { split($(i + 1), a, "/"); print a[1] "/32" } }'
    ip -o -4 route show | awk '{ print $1; for (i = 1; i < NF; i++) if ($i == "via") print $(i + 1) "/32" }'
    echo 169.254.0.0/16
  } | grep -v -e '^127\.' -e '^10\.0\.2\.' -e '^default' -e '^10\.254\.' | sort -u
}

start_host() {
  local n=$1 ns veth dir
  ns=$(ns_of "$n") veth=$(veth_of "$n") dir="$STATE/th-$n"
  mkdir -p "$dir" "/etc/netns/$ns"
  echo "nameserver 10.0.2.3" >"/etc/netns/$ns/resolv.conf"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add "$veth" type veth peer name ssh0 netns "$ns"
  ip addr add "$(host_ip "$n")/30" dev "$veth"
  ip link set "$veth" up
  ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
  ip -n "$ns" addr add "$(guest_ip "$n")/30" dev ssh0
  ip -n "$ns" link set ssh0 up
  # The veth carries replies to connections made from this side, nothing
  # the machine opens.
  ip netns exec "$ns" iptables -A OUTPUT -o ssh0 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  ip netns exec "$ns" iptables -A OUTPUT -o ssh0 -j REJECT
  slirp4netns --configure --mtu=65520 --disable-host-loopback --enable-seccomp \
    --netns-type=path "/run/netns/$ns" tap0 >"$dir/slirp4netns.log" 2>&1 &
  echo $! >"$dir/slirp4netns.pid"
  local waited=0
  until ip -n "$ns" -o addr show dev tap0 2>/dev/null | grep -q 'inet '; do
    sleep 0.1
    waited=$((waited + 1))
    [ $waited -lt 100 ] || die "slirp4netns did not configure th-$n: $(cat "$dir/slirp4netns.log")"
  done
  for dest in $(blocked_destinations); do
    ip -n "$ns" route add prohibit "$dest" 2>/dev/null || true
  done
  boot_host "$n"
}

# Boots the host from a fresh overlay of the image; once it answers on
# SSH, saves it as the snapshot `fresh` that a reset goes back to.
boot_host() {
  local n=$1 ns dir accel
  ns=$(ns_of "$n") dir="$STATE/th-$n"
  rm -f "$dir/disk.qcow2" "$dir/mon.in" "$dir/mon.out"
  qemu-img create -q -f qcow2 -F raw -b "$CACHE/disk.raw" "$dir/disk.qcow2"
  # The monitor is a pair of pipes only root here can open (a socket in
  # the namespace would be reachable from the machine through QEMU's NAT).
  mkfifo -m 0600 "$dir/mon.in" "$dir/mon.out"
  : >"$dir/monitor.log"
  cat <"$dir/mon.out" >>"$dir/monitor.log" 2>&1 &
  echo $! >"$dir/drain.pid"
  # cleanroom's own probe of this boot's KVM (a nested KVM can hang), else TCG.
  # No probe on this boot yet (no file): TCG.
  accel=${TEST_HOSTS_ACCEL:-$(awk -v boot="$(cat /proc/sys/kernel/random/boot_id)" '$2 == boot { print $1 }' /run/cleanroom/vm-accelerator 2>/dev/null || true)}
  accel=${accel:-tcg}
  # TCG keeps translated code across the guest's reboots, up to its code
  # buffer (1 GiB by default): each page the new boot writes over code of
  # the old one is looked up among all of it. After a trial that ran many
  # programs the next boot took 26-37 s of the host's CPU, 11-13 s with a
  # buffer of 256 MiB (full, it is flushed at once), the trial no slower.
  [ "$accel" = tcg ] && accel=tcg,tb-size=256
  ip netns exec "$ns" qemu-system-x86_64 -machine q35 -accel "$accel" -cpu max -smp "$CPUS" -m "$MEMORY_MB" \
    -display none -serial "file:$dir/console.log" -monitor "pipe:$dir/mon" \
    -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 quiet" \
    -drive "file=$dir/disk.qcow2,if=virtio,format=qcow2,cache=unsafe" \
    -netdev "user,id=n0,hostfwd=tcp:$(guest_ip "$n"):22-:22" -device virtio-net-pci,netdev=n0 \
    -daemonize -pidfile "$dir/qemu.pid" </dev/null >/dev/null 2>"$dir/qemu.log" ||
    die "th-$n's QEMU did not start: $(cat "$dir/qemu.log")"
}

qemu_running() {
  local pid
  pid=$(cat "$STATE/th-$1/qemu.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

stop_qemu() {
  local dir="$STATE/th-$1" pid
  for file in qemu.pid drain.pid; do
    pid=$(cat "$dir/$file" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    fi
    rm -f "$dir/$file"
  done
}

# Runs one command of QEMU's monitor and waits for its next prompt.
monitor() {
  local n=$1 command=$2 dir="$STATE/th-$1" before start=$SECONDS
  before=$(grep -o '(qemu)' "$dir/monitor.log" | wc -l)
  echo "$command" >"$dir/mon.in"
  until [ "$(grep -o '(qemu)' "$dir/monitor.log" | wc -l)" -gt "$before" ]; do
    [ $((SECONDS - start)) -lt 300 ] || die "th-$n: the monitor did not finish '$command'"
    sleep 0.1
  done
  if tail -c 2000 "$dir/monitor.log" | grep -q -i "error"; then
    die "th-$n: '$command': $(tail -c 500 "$dir/monitor.log")"
  fi
}

# The host's clock and random generator after a snapshot's return: both
# went back with it.
refresh() {
  local n=$1
  head -c 512 /dev/urandom | ssh_to "$n" "cat >/dev/urandom && date -u -s @$(date +%s.%N) >/dev/null"
}

ssh_to() {
  local n=$1
  shift
  ssh -F "$STATE/ssh_config" -o ConnectTimeout=5 "$(guest_ip "$n")" "$@"
}

wait_for_sshd() {
  local n=$1 start=$SECONDS
  until ssh_to "$n" true 2>/dev/null; do
    if [ $((SECONDS - start)) -ge "$BOOT_TIMEOUT" ]; then
      die "th-$n did not answer on SSH within ${BOOT_TIMEOUT}s; its console: $STATE/th-$n/console.log"
    fi
    kill -0 "$(cat "$STATE/th-$n/qemu.pid" 2>/dev/null)" 2>/dev/null || die "th-$n's QEMU died: $STATE/th-$n/console.log"
    sleep 1
  done
}

# Whether hosts 1..N run and answer on SSH.
all_answer() {
  local n
  for n in $(seq 1 "$1"); do
    qemu_running "$n" && ssh_to "$n" true 2>/dev/null || return 1
  done
}

# The client's side of every host, made or to be made: one block for their
# addresses, and the image's host key for all of them. AES-GCM first: an
# emulated host decrypts it with AES instructions QEMU emulates, at two
# thirds of ChaCha20's cost (384 MB into a host under TCG: 26 s of its CPU,
# 39 with ChaCha20, OpenSSH's first choice).
write_ssh_files() {
  printf '%s\n' "Host 10.254.*.2" "  User root" "  IdentityFile $CACHE/id_ed25519" "  IdentitiesOnly yes" \
    "  UserKnownHostsFile $STATE/known_hosts" "  StrictHostKeyChecking yes" \
    "  Ciphers aes128-gcm@openssh.com,chacha20-poly1305@openssh.com" >"$STATE/ssh_config"
  echo "10.254.*.2 $(cut -d' ' -f1,2 "$CACHE/host_key.pub")" >"$STATE/known_hosts"
}

write_pool_config() {
  local count=$1 n
  {
    echo "# The test hosts of scripts/test-hosts.sh: cleanroom run --backend ssh --config $STATE/cleanroom.toml"
    echo "[ssh]"
    echo "ssh_config = \"$STATE/ssh_config\""
    echo
    echo "[[ssh.pools]]"
    echo "name = \"test-hosts\""
    echo "reset = \"$SCRIPT reset {name}\""
    for n in $(seq 1 "$count"); do
      echo
      echo "[[ssh.pools.hosts]]"
      echo "name = \"th-$n\""
      echo "address = \"$(guest_ip "$n")\""
    done
  } >"$STATE/cleanroom.toml"
}

up() {
  local count=${1:-}
  [[ "$count" =~ ^[1-9][0-9]*$ ]] || die "usage: test-hosts.sh up N (N >= 1)"
  if [ -e "$STATE/count" ]; then
    if [ "$(cat "$STATE/count")" = "$count" ] && image_ready && all_answer "$count"; then
      say "$count host(s) up already; configuration: $STATE/cleanroom.toml"
      echo "$STATE/cleanroom.toml"
      return 0
    fi
    down
  fi
  build_image
  mkdir -p "$STATE"
  echo "$count" >"$STATE/count"
  write_ssh_files
  write_pool_config "$count"
  for n in $(seq 1 "$count"); do start_host "$n"; done
  for n in $(seq 1 "$count"); do
    wait_for_sshd "$n"
    monitor "$n" "savevm fresh"
    refresh "$n"
  done
  say "$count host(s) up; configuration: $STATE/cleanroom.toml"
  echo "$STATE/cleanroom.toml"
}

reset() {
  local name=${1:-} n
  [ -n "$name" ] || die "usage: test-hosts.sh reset NAME"
  n=$(index_of "$name")
  [ -d "$STATE/th-$n" ] || die "no test host $name is up"
  if qemu_running "$n"; then
    monitor "$n" "loadvm fresh"
  else
    # Powered off from inside: booted again.
    stop_qemu "$n"
    boot_host "$n"
    wait_for_sshd "$n"
    monitor "$n" "savevm fresh"
  fi
  wait_for_sshd "$n"
  refresh "$n"
}

# Hosts that create makes are numbered from here (up's are 1..N).
FIRST_MADE=101

create() {
  local n=$FIRST_MADE
  build_image >&2
  mkdir -p "$STATE"
  [ -f "$STATE/ssh_config" ] || write_ssh_files
  # The directory claims the number: two creates at once get two.
  until mkdir "$STATE/th-$n" 2>/dev/null; do
    n=$((n + 1))
    [ "$n" -le 250 ] || die "no free host number (th-$FIRST_MADE to th-250 are taken)"
  done
  start_host "$n" >&2
  wait_for_sshd "$n"
  say "th-$n up"
  echo "name=th-$n"
  echo "address=$(guest_ip "$n")"
}

# Stops host n and removes everything of it.
remove_host() {
  local n=$1 dir="$STATE/th-$1" ns pid
  ns=$(ns_of "$n")
  stop_qemu "$n"
  pid=$(cat "$dir/slirp4netns.pid" 2>/dev/null || true)
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  if ip netns list | awk '{ print $1 }' | grep -qx "$ns"; then
    ip netns delete "$ns"
  fi
  rm -rf "/etc/netns/$ns" "$dir"
  ip link delete "$(veth_of "$n")" 2>/dev/null || true
}

destroy() {
  local name=${1:-} n
  [ -n "$name" ] || die "usage: test-hosts.sh destroy NAME"
  n=$(index_of "$name")
  [ -d "$STATE/th-$n" ] || die "no test host $name"
  remove_host "$n"
  say "$name destroyed"
}

provisioner() {
  build_image
  mkdir -p "$STATE"
  [ -f "$STATE/ssh_config" ] || write_ssh_files
  {
    echo "# Hosts made for each trial by scripts/test-hosts.sh create and destroyed after it:"
    echo "# cleanroom run --backend ssh --config $STATE/provisioner.toml"
    echo "[ssh]"
    echo "ssh_config = \"$STATE/ssh_config\""
    echo
    echo "[[ssh.pools]]"
    echo "name = \"made-hosts\""
    echo "create = \"$SCRIPT create\""
    echo "destroy = \"$SCRIPT destroy {name}\""
    echo "concurrency = 2"
  } >"$STATE/provisioner.toml"
  echo "$STATE/provisioner.toml"
}

down() {
  local dir ns veth
  for dir in "$STATE"/th-*; do
    [ -d "$dir" ] || continue
    remove_host "${dir##*/th-}"
  done
  # What a killed run left: namespaces and veths of hosts whose directory went.
  for ns in $(ip netns list | awk '$1 ~ /^cleanroom-th-/ { print $1 }'); do
    ip netns delete "$ns"
    rm -rf "/etc/netns/$ns"
  done
  # (A veth whose peer's namespace is gone makes `ip` complain.)
  for veth in $(ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^crth[0-9]+@/ { split($2, a, "@"); print a[1] }'); do
    ip link delete "$veth" 2>/dev/null || true
  done
  rm -rf "$STATE"
  say "test hosts down (the image stays cached in $CACHE; test-hosts.sh clean removes it)"
}

case "${1:-}" in
  up) up "${2:-}" ;;
  create) create ;;
  destroy) destroy "${2:-}" ;;
  provisioner) provisioner ;;
  reset) reset "${2:-}" ;;
  down) down ;;
  clean) down; rm -rf "$CACHE" ;;
  *) die "usage: test-hosts.sh up N | reset NAME | create | destroy NAME | provisioner | down | clean" ;;
esac
