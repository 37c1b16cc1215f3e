#!/bin/bash
# Reference deployment for deap-nsga2-zdt (DEAP 1.2.2, November 2017).
# Snags:
#  - the source is Python 2 (print statements, xrange, iteritems, implicit
#    relative imports such as `import tools` in deap/cma.py); setup.py asks
#    setuptools to run 2to3 at install time (use_2to3=True), which
#    setuptools >= 58 rejects: "error in deap setup command: use_2to3 is
#    invalid".  Convert the tree once with 2to3 (Debian package 2to3) and
#    drop the keyword.
#  - collections.Sequence & co. are gone since Python 3.10 (2to3 does not fix
#    that): use collections.abc.
#  - the hypervolume C++ extension needs g++ and the Python headers; if it
#    fails to build, setup.py silently installs pure Python, and the study
#    script refuses to run without the C hypervolume.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends python3-venv python3-dev g++ 2to3

cd /workspace/artifact
2to3 -w -n deap >/dev/null
grep -rl 'from collections import' deap | xargs sed -i -E \
    's/from collections import (Sequence|Mapping|Iterable|Callable)/from collections.abc import \1/'
sed -i 's/,\?\s*use_2to3=True//' setup.py

python3 -m venv /opt/deap-venv
/opt/deap-venv/bin/pip install --no-cache-dir 'numpy==1.26.4'
/opt/deap-venv/bin/pip install --no-cache-dir .
(cd / && /opt/deap-venv/bin/python -c 'from deap.tools._hypervolume import hv; print("hv:", hv.__file__)')

echo 'PATH="/opt/deap-venv/bin:$PATH"; export PATH' > /etc/profile.d/deap-venv.sh

bash -lc 'cd /workspace/artifact && python3 moea_study/run_moea.py --config moea_study/configs/paper.json'
