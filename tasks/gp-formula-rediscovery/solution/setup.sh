#!/bin/bash
# Reference deployment for gp-formula-rediscovery (gplearn 0.3.0).
# Snags:
#  - benchmarks/requirements.txt pins numpy 1.13 / scipy 1.0 /
#    scikit-learn 0.19: no wheels for Python 3.11, and they do not build.
#  - gplearn 0.3.0 imports sklearn.externals.six and
#    sklearn.externals.joblib, both removed from scikit-learn (0.21 / 0.23);
#    no scikit-learn that still has them installs on Python 3.11.
#    Use the standalone six and joblib packages instead.
#  - gplearn/utils.py uses np.int (removed in numpy 1.24).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends python3-venv

python3 -m venv /opt/gp-venv
/opt/gp-venv/bin/pip install --no-cache-dir \
    numpy==1.26.4 scipy==1.11.4 scikit-learn==1.3.2 joblib six
echo 'PATH="/opt/gp-venv/bin:$PATH"; export PATH' > /etc/profile.d/gp-venv.sh

cd /workspace/artifact
sed -i 's/^from sklearn\.externals import six$/import six/' \
    gplearn/fitness.py gplearn/functions.py gplearn/genetic.py
sed -i 's/^from sklearn\.externals\.joblib import /from joblib import /' \
    gplearn/genetic.py gplearn/utils.py
sed -i 's/dtype=np\.int)/dtype=int)/' gplearn/utils.py

bash -lc 'cd /workspace/artifact && python3 benchmarks/run_benchmarks.py --config benchmarks/table1.json'
