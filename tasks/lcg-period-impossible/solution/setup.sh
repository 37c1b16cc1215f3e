#!/bin/bash
# Reference deployment for lcg-period-impossible: a C compiler and make.
# Its table is right; the verifier asks for what no LCG can do.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends gcc libc6-dev make
cd /workspace/artifact
bash run_table2.sh
