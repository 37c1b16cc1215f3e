#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""
NSGA-II on the ZDT / DTLZ test problems and CMA-ES on smooth benchmarks,
with DEAP.  Reproduces Tables 1 and 2 of the paper:

    python moea_study/run_moea.py --config moea_study/configs/paper.json

Hypervolumes are computed with DEAP's C hypervolume extension
(deap.tools._hypervolume.hv); the pure-Python fallback is far too slow for
the 3-objective fronts, so this script insists on the compiled one.
"""
from __future__ import division, print_function

import argparse
import json
import math
import os
import random
import sys
import time

import numpy

from deap import base, benchmarks, cma, creator, tools
from deap.benchmarks.tools import convergence

try:
    from deap.tools._hypervolume import hv
except ImportError:
    sys.exit("run_moea.py: DEAP's C hypervolume extension "
             "(deap.tools._hypervolume.hv) is not built; "
             "install DEAP with its C extensions")


# ----------------------------------------------------------------------------
# problems

def problem(spec):
    name = spec['name']
    n = int(spec['ndim'])
    if name in ('zdt1', 'zdt2', 'zdt3'):
        return getattr(benchmarks, name), n, 2, [0.0] * n, [1.0] * n
    if name == 'zdt4':
        return benchmarks.zdt4, n, 2, [0.0] + [-5.0] * (n - 1), [1.0] + [5.0] * (n - 1)
    if name == 'dtlz2':
        m = int(spec['nobj'])
        return (lambda ind: benchmarks.dtlz2(ind, m)), n, m, [0.0] * n, [1.0] * n
    raise ValueError('unknown problem %r' % name)


def optimal_front(name, m, npts=1000):
    """Points on the true Pareto front (for the convergence metric)."""
    if name in ('zdt1', 'zdt4'):
        return [[x, 1.0 - math.sqrt(x)] for x in (i / (npts - 1) for i in range(npts))]
    if name == 'zdt2':
        return [[x, 1.0 - x * x] for x in (i / (npts - 1) for i in range(npts))]
    if name == 'zdt3':
        pts = [[x, 1.0 - math.sqrt(x) - x * math.sin(10 * math.pi * x)]
               for x in (i / (20 * npts - 1) for i in range(20 * npts))]
        pts.sort()
        front, best = [], float('inf')
        for p in pts:
            if p[1] < best:
                front.append(p)
                best = p[1]
        return front
    if name == 'dtlz2' and m == 3:
        k = int(math.sqrt(npts))
        out = []
        for i in range(k):
            for j in range(k):
                a = 0.5 * math.pi * i / (k - 1)
                b = 0.5 * math.pi * j / (k - 1)
                out.append([math.cos(a) * math.cos(b), math.cos(a) * math.sin(b), math.sin(a)])
        return out
    raise ValueError(name)


def nsga2(spec, common, seed):
    evaluate, n, m, low, up = problem(spec)
    random.seed(seed)
    name = 'Fit%d' % m
    if not hasattr(creator, name):
        creator.create(name, base.Fitness, weights=(-1.0,) * m)
        creator.create('Ind%d' % m, list, fitness=getattr(creator, name))
    Ind = getattr(creator, 'Ind%d' % m)

    tb = base.Toolbox()
    tb.register('attr', lambda: [random.uniform(a, b) for a, b in zip(low, up)])
    tb.register('individual', tools.initIterate, Ind, tb.attr)
    tb.register('population', tools.initRepeat, list, tb.individual)
    tb.register('evaluate', evaluate)
    tb.register('mate', tools.cxSimulatedBinaryBounded, low=low, up=up,
                eta=common['eta_c'])
    tb.register('mutate', tools.mutPolynomialBounded, low=low, up=up,
                eta=common['eta_m'], indpb=1.0 / n)
    tb.register('select', tools.selNSGA2)

    mu, ngen, cxpb = common['mu'], spec.get('ngen', common['ngen']), common['cxpb']
    pop = tb.population(n=mu)
    nevals = 0
    for ind in pop:
        ind.fitness.values = tb.evaluate(ind)
        nevals += 1
    pop = tb.select(pop, len(pop))          # assigns crowding distance
    for gen in range(1, ngen):
        offspring = tools.selTournamentDCD(pop, len(pop))
        offspring = [tb.clone(ind) for ind in offspring]
        for a, b in zip(offspring[::2], offspring[1::2]):
            if random.random() <= cxpb:
                tb.mate(a, b)
            tb.mutate(a)
            tb.mutate(b)
            del a.fitness.values, b.fitness.values
        for ind in offspring:
            if not ind.fitness.valid:
                ind.fitness.values = tb.evaluate(ind)
                nevals += 1
        pop = tb.select(pop + offspring, mu)

    front = tools.sortNondominated(pop, len(pop), first_front_only=True)[0]
    objs = numpy.array([ind.fitness.values for ind in front])
    ref = spec['ref']
    hv_front = hv.hypervolume(objs, ref)
    opt = optimal_front(spec['name'], m)
    hv_opt = hv.hypervolume(numpy.array(opt), ref)
    conv = convergence(front, opt)
    return {'hypervolume': float(hv_front), 'hv_optimal': float(hv_opt),
            'hv_ratio': float(hv_front / hv_opt), 'convergence': float(conv),
            'front_size': len(front), 'evaluations': nevals,
            'f1_min': float(objs[:, 0].min())}


# ----------------------------------------------------------------------------

def cmaes(spec, seed):
    f = getattr(benchmarks, spec['function'])
    n = int(spec['ndim'])
    numpy.random.seed(seed)
    if not hasattr(creator, 'FitMin1'):
        creator.create('FitMin1', base.Fitness, weights=(-1.0,))
        creator.create('IndMin1', list, fitness=creator.FitMin1)
    strategy = cma.Strategy(centroid=[spec['x0']] * n, sigma=spec['sigma0'],
                            lambda_=spec.get('lambda', 4 + int(3 * math.log(n))))
    best, evals, hit = float('inf'), 0, None
    trace = {}
    for gen in range(spec['ngen']):
        pop = strategy.generate(creator.IndMin1)
        for ind in pop:
            ind.fitness.values = f(ind)
            evals += 1
            best = min(best, ind.fitness.values[0])
            if hit is None and best < spec['target']:
                hit = evals
        strategy.update(pop)
        if (gen + 1) in spec.get('report', []):
            trace[str(gen + 1)] = best
    return {'best': best, 'evals_to_target': hit, 'evaluations': evals,
            'sigma_final': float(strategy.sigma), 'trace': trace}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument('--config', required=True)
    p.add_argument('--out', default=None)
    a = p.parse_args(argv)
    with open(a.config) as fh:
        cfg = json.load(fh)
    out_path = a.out or os.path.join(
        'results', os.path.splitext(os.path.basename(a.config))[0] + '.json')
    seed = int(cfg['seed'])
    t0 = time.time()
    res = {'config': os.path.basename(a.config), 'seed': seed,
           'table1': {}, 'table2': {}}

    print('Table 1. NSGA-II (mu = %d, %d generations)' % (cfg['nsga2']['mu'], cfg['nsga2']['ngen']))
    print('  %-8s %12s %10s %12s %6s' % ('problem', 'HV', 'HV ratio', 'convergence', '|F|'))
    for spec in cfg['nsga2']['problems']:
        r = nsga2(spec, cfg['nsga2'], seed)
        res['table1'][spec['id']] = r
        print('  %-8s %12.6f %10.4f %12.6f %6d' % (spec['id'], r['hypervolume'], r['hv_ratio'],
                                                   r['convergence'], r['front_size']))

    print('Table 2. CMA-ES')
    for spec in cfg.get('cmaes', []):
        r = cmaes(spec, seed)
        res['table2'][spec['id']] = r
        print('  %-12s best %.3e  evals to %.0e: %s' % (spec['id'], r['best'], spec['target'],
                                                      r['evals_to_target']))
    res['wall_seconds'] = round(time.time() - t0, 2)
    d = os.path.dirname(out_path)
    if d and not os.path.isdir(d):
        os.makedirs(d)
    with open(out_path, 'w') as fh:
        json.dump(res, fh, indent=1, sort_keys=True)
    print('wrote %s' % out_path)


if __name__ == '__main__':
    main()
