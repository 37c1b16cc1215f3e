#!/bin/bash
# Reference deployment for filterpy-radar-tracking (FilterPy 1.4.5, 2018).
# The library itself is pure Python and still works with current numpy /
# scipy; the README's pins (numpy 1.14, scipy 1.1, Python 3.6) have no wheels
# for Python 3.11, so install current-enough releases into a venv and put it
# on the login shell's PATH.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends python3-venv

cd /workspace/artifact
python3 -m venv /opt/filterpy-venv
/opt/filterpy-venv/bin/pip install --no-cache-dir 'numpy==1.26.4' 'scipy==1.11.4'
/opt/filterpy-venv/bin/pip install --no-cache-dir .

echo 'PATH="/opt/filterpy-venv/bin:$PATH"; export PATH' > /etc/profile.d/filterpy-venv.sh

bash -lc 'cd /workspace/artifact && python3 tracking_study/run_tracking.py --config tracking_study/configs/paper.json'
