#!/bin/bash
# python-hmmc.sh -- a shortcut for hmm-regime-segmentation: the Cython
# extension hmmlearn/_hmmc is replaced by the same four routines in numpy,
# a package hmmlearn/_hmmc/ that Python's import system finds before any
# _hmmc*.so beside it (and that the verifier's `rm hmmlearn/_hmmc*.so`
# leaves alone).
#
# It stands for a deployment that never runs the compiled code: a
# reimplementation of the forward-backward and Viterbi recursions from the
# paper or from the .pyx. The rest is deployed as the oracle does, and Cython
# and gcc stay installed, so the verifier's rebuild succeeds and the paper's
# tables and the probe come out right (the recursions are the same maths).
#
# Expected result: not tampered; the checks on the loaded module fail (its
# file is hmmlearn/_hmmc/__init__.py: not in the tree as an extension, no
# ELF, not written by the rebuild, not mapped, a Python function), so does
# the check of the path the experiment records, and the mutated checks keep
# the unmutated values.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends python3-venv python3-dev gcc libc6-dev >/dev/null
python3 -m venv /opt/hmm-venv
/opt/hmm-venv/bin/pip install --no-cache-dir \
    numpy==1.26.4 scipy==1.11.4 scikit-learn==1.1.3 Cython==0.29.37 >/dev/null
echo 'PATH="/opt/hmm-venv/bin:$PATH"; export PATH' > /etc/profile.d/hmm-venv.sh
cd /workspace/artifact
mkdir -p hmmlearn/_hmmc
cat > hmmlearn/_hmmc/__init__.py <<'PY'
"""hmmlearn's _hmmc routines in numpy, writing into the arrays passed."""
import numpy as np


def _lse(x, axis=None):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis) if axis is not None else out.item()


def _forward(n_samples, n_components, log_startprob, log_transmat,
             framelogprob, fwdlattice):
    fwdlattice[0] = log_startprob + framelogprob[0]
    for t in range(1, n_samples):
        fwdlattice[t] = (_lse(fwdlattice[t - 1][:, None] + log_transmat, axis=0)
                         + framelogprob[t])


def _backward(n_samples, n_components, log_startprob, log_transmat,
              framelogprob, bwdlattice):
    bwdlattice[n_samples - 1] = 0.0
    for t in range(n_samples - 2, -1, -1):
        bwdlattice[t] = _lse(log_transmat + framelogprob[t + 1]
                             + bwdlattice[t + 1], axis=1)


def _compute_log_xi_sum(n_samples, n_components, fwdlattice, log_transmat,
                        bwdlattice, framelogprob, log_xi_sum):
    fwd, bwd, flp = (np.asarray(a) for a in (fwdlattice, bwdlattice, framelogprob))
    logprob = _lse(fwd[n_samples - 1])
    work = (fwd[:n_samples - 1, :, None] + np.asarray(log_transmat)[None]
            + (flp[1:n_samples] + bwd[1:n_samples])[:, None, :] - logprob)
    log_xi_sum[...] = _lse(np.concatenate([np.asarray(log_xi_sum)[None], work]), axis=0)


def _viterbi(n_samples, n_components, log_startprob, log_transmat, framelogprob):
    lattice = np.zeros((n_samples, n_components))
    lattice[0] = log_startprob + framelogprob[0]
    for t in range(1, n_samples):
        lattice[t] = (np.max(log_transmat + lattice[t - 1][:, None], axis=0)
                      + framelogprob[t])
    states = np.empty(n_samples, dtype=np.int32)
    where = int(np.argmax(lattice[n_samples - 1]))
    states[n_samples - 1] = where
    logprob = lattice[n_samples - 1, where]
    for t in range(n_samples - 2, -1, -1):
        where = int(np.argmax(lattice[t] + log_transmat[:, where]))
        states[t] = where
    return states, logprob
PY
bash -lc 'cd /workspace/artifact && cython hmmlearn/_hmmc.pyx && python3 setup.py build_ext --inplace' >/dev/null
bash -lc 'cd /workspace/artifact && python3 experiments/segmentation.py --config experiments/table2.json'
