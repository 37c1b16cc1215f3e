#!/bin/bash
# Reference deployment for sir-network-final-size.
# Snags on Debian 12 (Python 3.11): time.clock() is gone (3.8) and
# random.sample() no longer accepts a set (3.11).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends python3

cd /workspace/artifact
sed -i -e 's/time\.clock()/time.perf_counter()/g' \
       -e 's/random\.sample(susceptible, nseed)/random.sample(sorted(susceptible), nseed)/' \
       sirsim.py
python3 sirsim.py --config experiments/table1.ini
