#!/bin/bash
# Reference deployment for deap-nsga2-zdt (DEAP 1.2.2, November 2017).
# Snags:
#  - the source is Python 2 (print statements, xrange, iteritems, implicit
#    relative imports such as `import tools` in deap/cma.py); setup.py asks
#    setuptools to run 2to3 at build time (use_2to3=True), which
#    setuptools >= 58 rejects: "error in deap setup command: use_2to3 is
#    invalid".  setup.py must stay as it is, so build with setuptools 57.5
#    (the last with use_2to3; it works on Python 3.11, whose lib2to3 is
#    still there) and without pip's build isolation, which would fetch the
#    newest setuptools.
#  - collections.Sequence & co. are gone since Python 3.10 (2to3 does not fix
#    that): use collections.abc.
#  - the hypervolume C++ extension needs g++ and the Python headers; if it
#    fails to build, setup.py silently installs pure Python, and the study
#    script refuses to run without the C hypervolume.
#  - the verifier reinstalls from the tree, offline, with
#    `python3 -m pip install --no-index --no-deps --no-build-isolation
#    --force-reinstall .`: this venv's pip, setuptools 57.5 and wheel must
#    be able to do that without the network.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends python3-venv python3-dev g++

cd /workspace/artifact
grep -rl 'from collections import' deap | xargs sed -i -E \
    's/from collections import (Sequence|Mapping|Iterable|Callable)/from collections.abc import \1/'

python3 -m venv /opt/deap-venv
/opt/deap-venv/bin/pip install --no-cache-dir 'numpy==1.26.4' 'setuptools==57.5.0' 'wheel==0.38.4'
/opt/deap-venv/bin/python -m pip install --no-cache-dir --no-deps --no-build-isolation .
(cd / && /opt/deap-venv/bin/python -c 'from deap.tools._hypervolume import hv; print("hv:", hv.__file__)')

echo 'PATH="/opt/deap-venv/bin:$PATH"; export PATH' > /etc/profile.d/deap-venv.sh

bash -lc 'cd /workspace/artifact && python3 moea_study/run_moea.py --config moea_study/configs/paper.json'
