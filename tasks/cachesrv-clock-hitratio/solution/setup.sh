#!/bin/bash
# Reference deployment for cachesrv-clock-hitratio.
# Snags: glibc 2.32 removed <sys/sysctl.h>, which cachesrv.c includes for
# nothing; gcc 10 made -fno-common the default, and common.h defines its
# globals in every file that includes it; the daemon ships a SysV script
# that runs it as a user `cachesrv` that does not exist. On a systemd
# machine a unit of its own is simplest: the daemon in the foreground.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends gcc make libc6-dev

cd /workspace/artifact
sed -i '/#include <sys\/sysctl.h>/d' cachesrv.c
sed -i 's/^CFLAGS = -O2 -Wall$/CFLAGS = -O2 -Wall -fcommon/' Makefile
make
make install

id cachesrv >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin cachesrv
cat > /etc/systemd/system/cachesrv.service <<'UNIT'
[Unit]
Description=cachesrv key cache daemon
After=network.target

[Service]
ExecStart=/usr/local/sbin/cachesrv -f
User=cachesrv
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now cachesrv.service
for i in $(seq 50); do bash run_bench.sh && exit 0; sleep 0.2; done
exit 1
