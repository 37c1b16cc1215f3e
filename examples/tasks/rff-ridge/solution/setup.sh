#!/bin/bash
# Reference deployment for rff-ridge.
# Snags: requirements.txt pins numpy 1.16 / scipy 1.2, which have no wheels
# for Debian 12's Python 3.11 (and do not build from source there).  The
# code uses np.float (removed in numpy 1.24) and solve(..., sym_pos=True)
# (removed in scipy 1.11), so the newest releases do not work either:
# pin the last releases that have both Python 3.11 wheels and those APIs.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends python3-venv

cd /workspace/artifact
cat > requirements.txt <<'REQ'
numpy==1.23.5
scipy==1.10.1
tqdm==4.31.1
REQ

python3 -m venv /opt/rff-venv
/opt/rff-venv/bin/pip install --no-cache-dir -r requirements.txt

# a login shell's python3 must be the venv's
echo 'PATH="/opt/rff-venv/bin:$PATH"; export PATH' > /etc/profile.d/rff-venv.sh

bash -lc 'cd /workspace/artifact && python3 run_experiments.py --config configs/table2.json'
