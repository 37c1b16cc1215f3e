#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Tables 2-4 of "Sizing mmap-backed Bloom filters for URL deduplication".

Measures the false-positive rate of pybloomfilter.BloomFilter (the library in
this checkout, built in place) against its design target and against the
classic analytic estimate, for URL keys and for integer flow keys, and checks
union / intersection / reopen-from-disk behaviour of the mmap'd filters.

    python bloombench/fpr_table.py --config bloombench/table2.json

Everything is driven by seeded generators (keys from random.Random(seed),
hash seeds from the global random module, which the library draws from), so
the counts are exactly reproducible.  We never time anything here; the
throughput numbers of Section 5 come from bloombench/speed.py (not included).
"""
from __future__ import division, print_function

import argparse
import binascii
import json
import math
import os
import random
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# always the pybloomfilter of this checkout (python setup.py build_ext --inplace)
sys.path.insert(0, ROOT)

import pybloomfilter  # noqa: E402

TLDS = ['com', 'org', 'net', 'de', 'io', 'example']
WORDS = ['index', 'news', 'item', 'story', 'user', 'tag', 'page', 'search',
         'archive', 'post', 'media', 'feed']


# --------------------------------------------------------------------- keys

def url_keys(rng, count, exclude=None):
    """`count` distinct synthetic crawler URLs (native str), in draw order."""
    seen = set() if exclude is None else set(exclude)
    out = []
    while len(out) < count:
        host = rng.getrandbits(14)
        tld = TLDS[rng.getrandbits(8) % len(TLDS)]
        word = WORDS[rng.getrandbits(8) % len(WORDS)]
        ident = rng.getrandbits(40)
        url = 'http://www.site%05d.%s/%s/%x.html' % (host, tld, word, ident)
        if url not in seen:
            seen.add(url)
            out.append(url)
    return out


def flow_keys(rng, count, exclude=None):
    """`count` distinct 62-bit integer flow identifiers, in draw order."""
    seen = set() if exclude is None else set(exclude)
    out = []
    while len(out) < count:
        k = rng.getrandbits(62)
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


# ------------------------------------------------------------------ filters

def new_filter(path, capacity, error_rate, seed):
    # pybloomfilter draws its hash seeds from the global random module
    random.seed(seed)
    if os.path.exists(path):
        os.unlink(path)
    return pybloomfilter.BloomFilter(capacity, error_rate, path)


def bits_set(bf, path):
    """Number of 1 bits in the filter's bit vector, read back from its file."""
    bf.sync()
    nbytes = int(math.ceil(bf.num_bits / 8.0))
    with open(path, 'rb') as f:
        data = f.read()
    vec = data[len(data) - nbytes:]
    return bin(int(binascii.hexlify(vec) or b'0', 16)).count('1')


def analytic(m, k, n):
    fill = 1.0 - (1.0 - 1.0 / m) ** (k * n)
    return fill, fill ** k


def measure(bf, path, members, queries):
    n = len(members)
    m, k = bf.num_bits, bf.num_hashes
    ones = bits_set(bf, path)
    fn = sum(1 for x in members if x not in bf)
    fp = sum(1 for x in queries if x in bf)
    fill_exp, fpr_exp = analytic(m, k, n)
    fpr = fp / len(queries)
    return {
        'n': n,
        'num_bits': m,
        'num_hashes': k,
        'bits_set': ones,
        'fill': round(ones / m, 8),
        'fill_analytic': round(fill_exp, 8),
        'len_reported': len(bf),
        'false_negatives': fn,
        'queries': len(queries),
        'false_positives': fp,
        'fpr': round(fpr, 8),
        'fpr_analytic': round(fpr_exp, 10),
        'fpr_over_target': round(fpr / bf.error_rate, 6),
    }


def fmt_rate(p):
    return ('%g' % p)


# ------------------------------------------------------------------- tables

def table2(cfg, workdir, members_all, queries):
    """URL keys: FPR at several loads for each design error rate."""
    cap = cfg['capacity']
    out = {}
    for i, p in enumerate(cfg['error_rates']):
        path = os.path.join(workdir, 'urls-%s.bloom' % fmt_rate(p))
        bf = new_filter(path, cap, p, cfg['seed'] * 100 + i)
        out[fmt_rate(p)] = rows = {}
        added = 0
        for load in cfg['loads']:
            n = int(round(load * cap))
            bf.update(members_all[added:n])
            added = n
            rows['%.2f' % load] = measure(bf, path, members_all[:n], queries)
        bf.close()
    return out


def table3(cfg, workdir, rng):
    """Integer flow keys (hashed through hash() and _hash_long) at load 1."""
    cap = cfg['capacity']
    members = flow_keys(rng, cap)
    queries = flow_keys(rng, cfg['queries'], exclude=members)
    out = {}
    for i, p in enumerate(cfg['error_rates']):
        path = os.path.join(workdir, 'flows-%s.bloom' % fmt_rate(p))
        bf = new_filter(path, cap, p, cfg['seed'] * 100 + 50 + i)
        bf.update(members)
        out[fmt_rate(p)] = measure(bf, path, members, queries)
        bf.close()
    return out


def table4(cfg, workdir, rng):
    """Union and intersection of two crawl frontiers, and reopening from disk."""
    c = cfg['setops']
    cap, p, overlap = c['capacity'], c['error_rate'], c['overlap']
    keys = url_keys(rng, 2 * cap - overlap + c['queries'])
    a = keys[:cap]
    b = keys[cap - overlap:2 * cap - overlap]
    queries = keys[2 * cap - overlap:]
    pa = os.path.join(workdir, 'frontier-a.bloom')
    pb = os.path.join(workdir, 'frontier-b.bloom')
    pu = os.path.join(workdir, 'frontier-union.bloom')
    pi = os.path.join(workdir, 'frontier-inter.bloom')

    fa = new_filter(pa, cap, p, cfg['seed'] * 100 + 90)
    fb = fa.copy_template(pb)
    fa.update(a)
    fb.update(b)
    only_a = a[:cap - overlap]
    both = a[cap - overlap:]

    res = {'capacity': cap, 'error_rate': p, 'overlap': overlap,
           'num_bits': fa.num_bits, 'num_hashes': fa.num_hashes,
           'bits_a': bits_set(fa, pa), 'bits_b': bits_set(fb, pb)}

    fu = fa.copy_template(pu)
    fu.union(fa)
    fu.union(fb)
    res['union'] = {
        'bits_set': bits_set(fu, pu),
        'false_negatives': sum(1 for x in a + b[overlap:] if x not in fu),
        'false_positives': sum(1 for x in queries if x in fu),
    }
    fi = fa.copy_template(pi)
    fi.union(fa)
    fi.intersection(fb)
    res['intersection'] = {
        'bits_set': bits_set(fi, pi),
        'false_negatives': sum(1 for x in both if x not in fi),
        'a_only_reported': sum(1 for x in only_a if x in fi),
        'false_positives': sum(1 for x in queries if x in fi),
    }
    answers = [x in fu for x in queries]
    seeds = list(fu.hash_seeds)
    for f in (fa, fb, fu, fi):
        f.close()

    # reopen the union from its file, as the crawler does after a restart
    fr = pybloomfilter.BloomFilter.open(pu)
    res['reopen'] = {
        'num_bits': fr.num_bits,
        'num_hashes': fr.num_hashes,
        'capacity': fr.capacity,
        'seeds_match': list(fr.hash_seeds) == seeds,
        'bits_set': bits_set(fr, pu),
        'same_answers': sum(1 for x, y in zip(queries, answers) if (x in fr) == y),
        'false_negatives': sum(1 for x in a + b[overlap:] if x not in fr),
    }
    fr.close()
    return res


def print_tables(res):
    print('Table 2: URL keys, capacity %d, %d queries'
          % (res['config']['capacity'], res['config']['queries']))
    print('%8s %5s %3s %9s %8s %8s %7s %10s %10s %7s'
          % ('target', 'load', 'k', 'm', 'fill', 'fill_an', 'FP', 'FPR',
             'FPR_an', 'FPR/p'))
    for p, rows in res['table2'].items():
        for load, r in rows.items():
            print('%8s %5s %3d %9d %8.5f %8.5f %7d %10.6f %10.6f %7.3f'
                  % (p, load, r['num_hashes'], r['num_bits'], r['fill'],
                     r['fill_analytic'], r['false_positives'], r['fpr'],
                     r['fpr_analytic'], r['fpr_over_target']))
    print()
    print('Table 3: integer flow keys at load 1.00')
    for p, r in res['table3'].items():
        print('%8s %3d %9d FP %6d  FPR %.6f  analytic %.6f'
              % (p, r['num_hashes'], r['num_bits'], r['false_positives'],
                 r['fpr'], r['fpr_analytic']))
    print()
    t = res['table4']
    print('Table 4: set operations (capacity %d, p=%g, overlap %d)'
          % (t['capacity'], t['error_rate'], t['overlap']))
    print('  union:        bits %d  FN %d  FP %d' % (
        t['union']['bits_set'], t['union']['false_negatives'],
        t['union']['false_positives']))
    print('  intersection: bits %d  FN %d  A-only reported %d  FP %d' % (
        t['intersection']['bits_set'], t['intersection']['false_negatives'],
        t['intersection']['a_only_reported'],
        t['intersection']['false_positives']))
    print('  reopened:     bits %d  same answers %d  seeds match %s' % (
        t['reopen']['bits_set'], t['reopen']['same_answers'],
        t['reopen']['seeds_match']))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--config', default=os.path.join(HERE, 'table2.json'))
    ap.add_argument('--out', default=None,
                    help='result JSON (default: results/<config name>.json)')
    args = ap.parse_args()

    with open(args.config) as f:
        cfg = json.load(f)
    name = os.path.splitext(os.path.basename(args.config))[0]
    out = args.out or os.path.join(ROOT, 'results', name + '.json')
    outdir = os.path.dirname(os.path.abspath(out))
    workdir = os.path.join(outdir, 'filters-' + name)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)

    rng = random.Random(cfg['seed'])
    cap = cfg['capacity']
    n_max = int(round(max(cfg['loads']) * cap))
    keys = url_keys(rng, n_max + cfg['queries'])
    members_all, queries = keys[:n_max], keys[n_max:]

    modfile = os.path.abspath(pybloomfilter.__file__)
    res = {
        'pybloomfilter_version': list(pybloomfilter.VERSION),
        'module_in_checkout': os.path.dirname(modfile) == ROOT,
        'config': cfg,
        'table2': table2(cfg, workdir, members_all, queries),
        'table3': table3(cfg, workdir, rng),
        'table4': table4(cfg, workdir, rng),
    }
    with open(out, 'w') as f:
        json.dump(res, f, indent=1, sort_keys=True)
    print_tables(res)
    print()
    print('wrote %s' % out)


if __name__ == '__main__':
    main()
