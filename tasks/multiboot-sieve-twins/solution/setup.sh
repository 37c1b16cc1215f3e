#!/bin/bash
# Reference deployment for multiboot-sieve-twins.
# Snags: io.h defines its port helpers `inline` without `static`, which
# gnu89 allowed and C99 (gcc's default since 5) turns into external
# references that nothing defines at -O0; the experiment calls `qemu`, a
# name Debian's QEMU packages stopped providing long ago.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends gcc make binutils libc6-dev qemu-system-x86

cd /workspace/artifact
sed -i 's/^inline /static inline /' io.h
make
ln -sf /usr/bin/qemu-system-i386 /usr/local/bin/qemu
sh run_experiment.sh
