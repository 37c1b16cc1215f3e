"""Import hmmlearn's extension as the experiment does (the checkout first on
sys.path) and call its routines directly, on a small model of the
verifier's.

Prints JSON: the file the module was loaded from, whether that file is
mapped into this process (a real extension is), whether its forward pass is
a Python function (Cython's are not, in any Cython release), and what the
forward pass and Viterbi return. Run from the artifact's directory.
"""
import json
import os
import sys
import types

import numpy as np

sys.path.insert(0, os.getcwd())
from hmmlearn import _hmmc  # noqa: E402


def mapped_files():
    """The files mapped into this process (the sixth field of its maps)."""
    with open("/proc/self/maps") as maps:
        fields = [line.split(None, 5) for line in maps]
    return {f[5].strip() for f in fields if len(f) == 6}


def run():
    """Forward log-likelihood and Viterbi path of a 3-state model on 40
    frames drawn from a seeded stream."""
    rs = np.random.RandomState(90210)
    n, k = 40, 3
    log_start = np.log(np.array([0.6, 0.3, 0.1]))
    log_trans = np.log(np.array([[0.8, 0.15, 0.05],
                                 [0.1, 0.7, 0.2],
                                 [0.25, 0.25, 0.5]]))
    frames = np.log(rs.dirichlet(np.ones(k), size=n))
    fwd = np.zeros((n, k))
    _hmmc._forward(n, k, log_start, log_trans, frames, fwd)
    path, logprob = _hmmc._viterbi(n, k, log_start, log_trans, frames)
    return {"forward_logprob": float(np.logaddexp.reduce(fwd[-1])),
            "viterbi_logprob": float(logprob),
            "viterbi_path": "".join(str(int(s)) for s in path)}


path = os.path.realpath(_hmmc.__file__)
print(json.dumps({
    "file": path,
    "mapped": path in mapped_files(),
    "python_function": isinstance(_hmmc._forward, types.FunctionType),
    "call": run(),
}, indent=1, sort_keys=True))
