#!/bin/bash
# Reference deployment for primes-table-erratum: a C compiler and make are
# all it needs. The table it gives is correct, and is not the paper's.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends gcc libc6-dev make
cd /workspace/artifact
bash run_table1.sh
