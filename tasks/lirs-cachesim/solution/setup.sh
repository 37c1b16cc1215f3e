#!/bin/bash
# Reference deployment for lirs-cachesim.
# Snags: a GOPATH-era project (no go.mod, dep-vendored dependency, imports by
# full GOPATH path).  Go 1.19 defaults to module mode and cannot fetch
# anything (no module proxy).  Fix: build in GOPATH mode from a GOPATH
# checkout (symlink) and make that the login-shell default.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends golang-go make

mkdir -p /root/go/src/github.com/hpss-lab
ln -sfn /workspace/artifact /root/go/src/github.com/hpss-lab/cachesim
cat > /etc/profile.d/cachesim-go.sh <<'PROFILE'
export GOPATH=/root/go
export GO111MODULE=off
PROFILE
. /etc/profile.d/cachesim-go.sh

cd /workspace/artifact
go test github.com/hpss-lab/cachesim/policy
bash run_table2.sh
head -5 results/table2.csv
