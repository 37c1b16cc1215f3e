#!/bin/bash
# Reference deployment for salib-ishigami-sobol (SALib 1.1.3, January 2018).
# Snags:
#  - setup.py is a PyScaffold 2.5 stub (setup_requires pyscaffold<2.6): pip
#    fetches that PyScaffold, which then dies on setuptools >= 60
#    ("invalid command 'bdist_wininst'") -> plain setuptools setup.py.
#  - scipy.misc.comb is gone (scipy >= 1.3); SALib.sample.morris imports it
#    at module level, so even `import SALib.sample.morris` fails.
#  - np.int / np.float / np.bool (numpy >= 1.24) in SALib.util (grouped
#    analyses) and SALib.analyze.morris; np.mat (numpy >= 2.0) in the
#    Morris sampler; open(..., 'rU') (Python 3.11) in read_param_file.
#  - no wheels of the numpy/scipy of 2018 for Python 3.11.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends python3-venv

cd /workspace/artifact

# source fixes
sed -i 's/from scipy\.misc import comb/from scipy.special import comb/' \
    SALib/sample/morris/brute.py SALib/sample/morris/gurobi.py
sed -i -E 's/dtype=np\.(int|float|bool)\)/dtype=\1)/' \
    SALib/util/__init__.py SALib/analyze/morris.py SALib/sample/ff.py
sed -i "s/open(filename, 'rU')/open(filename, 'r')/" SALib/util/__init__.py
sed -i 's/np\.mat(/np.asmatrix(/g' SALib/sample/morris/__init__.py
sed -i "s/elif row\['group'\] is 'NA':/elif row['group'] == 'NA':/" SALib/util/__init__.py

cat > setup.py <<'PY'
from setuptools import setup, find_packages

setup(name='SALib', version='1.1.3',
      description='Tools for sensitivity analysis',
      packages=find_packages(exclude=['tests', 'tests.*', 'docs']),
      install_requires=['numpy', 'scipy'])
PY

python3 -m venv /opt/salib-venv
/opt/salib-venv/bin/pip install --no-cache-dir 'numpy==1.26.4' 'scipy==1.11.4'
/opt/salib-venv/bin/pip install --no-cache-dir --no-build-isolation .

echo 'PATH="/opt/salib-venv/bin:$PATH"; export PATH' > /etc/profile.d/salib-venv.sh

bash -lc 'cd /workspace/artifact && python3 gsa_study/run_study.py --config gsa_study/configs/paper.json'
