#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""
Convergence study of variance-based (Sobol) and elementary-effects (Morris)
sensitivity indices computed with SALib.

Companion code of "How many model runs does a Sobol analysis need? A
convergence study on analytic test functions" (EMS short communication).

    python gsa_study/run_study.py --config gsa_study/configs/paper.json

writes results/study.json (all indices, bootstrap intervals and the errors
against the analytic values) and prints Tables 1-3.

Needs SALib importable (pip install the repository) plus numpy and scipy.
"""
from __future__ import division, print_function

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from SALib.sample import saltelli
from SALib.sample import morris as morris_sampler
from SALib.analyze import sobol
from SALib.analyze import morris as morris_analyzer


# --------------------------------------------------------------------------
# test functions (vectorised; the ones in SALib.test_functions loop in Python
# and have fixed coefficients)

def ishigami(X, a=7.0, b=0.1):
    return (np.sin(X[:, 0]) + a * np.sin(X[:, 1]) ** 2
            + b * X[:, 2] ** 4 * np.sin(X[:, 0]))


def ishigami_analytic(a=7.0, b=0.1):
    """Closed-form first- and total-order indices of the Ishigami function
    on [-pi, pi]^3 (Ishigami & Homma 1990; Sobol & Levitan 1999)."""
    pi4 = math.pi ** 4
    pi8 = math.pi ** 8
    V1 = 0.5 * (1.0 + b * pi4 / 5.0) ** 2
    V2 = a ** 2 / 8.0
    V3 = 0.0
    V13 = b ** 2 * pi8 * (1.0 / 18.0 - 1.0 / 50.0)
    V = V1 + V2 + V3 + V13
    S1 = [V1 / V, V2 / V, V3 / V]
    ST = [(V1 + V13) / V, V2 / V, (V3 + V13) / V]
    return {'S1': S1, 'ST': ST, 'S2': {'x1,x3': V13 / V}, 'V': V}


def sobol_g(X, a):
    a = np.asarray(a, dtype=float)
    return np.prod((np.abs(4.0 * X - 2.0) + a) / (1.0 + a), axis=1)


def sobol_g_analytic(a):
    a = np.asarray(a, dtype=float)
    Vi = 1.0 / (3.0 * (1.0 + a) ** 2)
    V = np.prod(1.0 + Vi) - 1.0
    S1 = Vi / V
    ST = np.array([Vi[i] * np.prod(np.delete(1.0 + Vi, i)) for i in range(len(a))]) / V
    return {'S1': list(S1), 'ST': list(ST), 'V': float(V)}


MODELS = {
    'ishigami': (ishigami, ishigami_analytic),
    'sobol_g': (sobol_g, sobol_g_analytic),
}


def make_problem(spec):
    model = spec['model']
    args = spec.get('model_args', {})
    if model == 'ishigami':
        d = 3
        bounds = [[-math.pi, math.pi]] * 3
    elif model == 'sobol_g':
        d = len(args['a'])
        bounds = [[0.0, 1.0]] * d
    else:
        raise ValueError('unknown model %r' % model)
    problem = {'num_vars': d,
               'names': ['x%d' % (i + 1) for i in range(d)],
               'bounds': bounds}
    if spec.get('groups'):
        problem['groups'] = spec['groups']
    return problem


def tolist(v):
    return [float(x) for x in np.asarray(v).ravel()]


# --------------------------------------------------------------------------

def run_sobol(spec, seed):
    f, exact = MODELS[spec['model']]
    args = spec.get('model_args', {})
    problem = make_problem(spec)
    second = bool(spec.get('second_order', True))
    out = {}
    ref = exact(**args)
    for N in spec['N']:
        X = saltelli.sample(problem, N, calc_second_order=second)
        Y = f(X, **args)
        np.random.seed(seed)          # bootstrap resampling
        Si = sobol.analyze(problem, Y, calc_second_order=second,
                           num_resamples=spec.get('num_resamples', 100),
                           conf_level=0.95, print_to_console=False)
        row = {'model_runs': int(Y.size),
               'S1': tolist(Si['S1']), 'S1_conf': tolist(Si['S1_conf']),
               'ST': tolist(Si['ST']), 'ST_conf': tolist(Si['ST_conf'])}
        if second:
            S2 = np.asarray(Si['S2'])
            row['S2'] = [[float(x) if np.isfinite(x) else None for x in r] for r in S2]
        if not problem.get('groups'):
            row['max_abs_err_S1'] = float(np.max(np.abs(np.asarray(Si['S1']) - ref['S1'])))
            row['max_abs_err_ST'] = float(np.max(np.abs(np.asarray(Si['ST']) - ref['ST'])))
        out[str(N)] = row
    return out, ref


def run_morris(spec, seed):
    f, _ = MODELS[spec['model']]
    args = spec.get('model_args', {})
    problem = make_problem(spec)
    levels = spec.get('num_levels', 4)
    jump = spec.get('grid_jump', 2)
    np.random.seed(seed)
    X = morris_sampler.sample(problem, spec['N'], levels, jump,
                              optimal_trajectories=spec.get('optimal_trajectories'),
                              local_optimization=True)
    Y = f(X, **args)
    Si = morris_analyzer.analyze(problem, X, Y, num_resamples=1000,
                                 conf_level=0.95, print_to_console=False,
                                 grid_jump=jump, num_levels=levels)
    ranking = [problem['names'][i] for i in np.argsort(-np.asarray(Si['mu_star']), kind='mergesort')]
    return {'model_runs': int(Y.size),
            'mu_star': tolist(Si['mu_star']), 'mu': tolist(Si['mu']),
            'sigma': tolist(Si['sigma']),
            'mu_star_conf': tolist(Si['mu_star_conf']),
            'ranking': ranking}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--config', required=True)
    p.add_argument('--out', default=None,
                   help='output JSON (default: results/<config name>.json)')
    a = p.parse_args(argv)

    with open(a.config) as fh:
        cfg = json.load(fh)
    seed = int(cfg['seed'])
    out_path = a.out or os.path.join(
        'results', os.path.splitext(os.path.basename(a.config))[0] + '.json')

    t0 = time.time()
    result = {'config': os.path.basename(a.config), 'seed': seed,
              'experiments': {}}
    for spec in cfg['experiments']:
        if spec['method'] == 'sobol':
            rows, ref = run_sobol(spec, seed)
            result['experiments'][spec['id']] = {
                'method': 'sobol', 'model': spec['model'],
                'analytic': {'S1': tolist(ref['S1']), 'ST': tolist(ref['ST'])},
                'N': rows}
            print('\n[%s] Sobol indices, %s %s' % (spec['id'], spec['model'],
                                                  spec.get('model_args', '')))
            print('%8s %8s  %-26s %-26s' % ('N', 'runs', 'S1', 'ST'))
            for N in spec['N']:
                r = rows[str(N)]
                print('%8d %8d  %-26s %-26s' % (
                    N, r['model_runs'],
                    ' '.join('%.4f' % x for x in r['S1']),
                    ' '.join('%.4f' % x for x in r['ST'])))
        elif spec['method'] == 'morris':
            r = run_morris(spec, seed)
            result['experiments'][spec['id']] = dict(method='morris',
                                                     model=spec['model'], **r)
            print('\n[%s] Morris screening, %s: ranking %s' % (
                spec['id'], spec['model'], ' > '.join(r['ranking'])))
            print('  mu*   ' + ' '.join('%.4f' % x for x in r['mu_star']))
            print('  sigma ' + ' '.join('%.4f' % x for x in r['sigma']))
        else:
            raise ValueError('unknown method %r' % spec['method'])

    result['wall_seconds'] = round(time.time() - t0, 3)
    d = os.path.dirname(out_path)
    if d and not os.path.isdir(d):
        os.makedirs(d)
    with open(out_path, 'w') as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    print('\nwrote %s' % out_path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
