#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""
Monte Carlo tracking study: Kalman filter / RTS smoother tuning and
EKF vs. UKF for range-bearing radar, all with FilterPy.

    python tracking_study/run_tracking.py --config tracking_study/configs/paper.json

prints Tables 1 and 2 of the paper and writes results/<config name>.json.
"""
from __future__ import division, print_function

import argparse
import json
import math
import os
import sys
import time

import numpy as np
from numpy.random import RandomState

from filterpy.kalman import KalmanFilter, ExtendedKalmanFilter
from filterpy.kalman import UnscentedKalmanFilter, MerweScaledSigmaPoints
from filterpy.common import Q_discrete_white_noise


# --------------------------------------------------------------------------
# scenario: straight leg, coordinated turn, straight leg (state x, vx, y, vy)

def simulate_truth(rs, sc, steps, dt):
    x = np.array(sc['x0'], dtype=float)
    omega = sc['turn_rate']
    t1, t2 = sc['turn_start'], sc['turn_end']
    sa = sc['accel_noise']
    xs = np.zeros((steps, 4))
    for k in range(steps):
        if t1 <= k < t2:
            c, s = math.cos(omega * dt), math.sin(omega * dt)
            vx, vy = x[1], x[3]
            x[0] += (s * vx - (1 - c) * vy) / omega
            x[2] += ((1 - c) * vx + s * vy) / omega
            x[1], x[3] = c * vx - s * vy, s * vx + c * vy
        else:
            x[0] += x[1] * dt
            x[2] += x[3] * dt
        a = rs.randn(2) * sa
        x[0] += 0.5 * dt * dt * a[0]
        x[1] += dt * a[0]
        x[2] += 0.5 * dt * dt * a[1]
        x[3] += dt * a[1]
        xs[k] = x
    return xs


def cv_F(dt):
    F = np.eye(4)
    F[0, 1] = dt
    F[2, 3] = dt
    return F


def cv_Q(dt, q):
    Q = np.zeros((4, 4))
    q2 = Q_discrete_white_noise(dim=2, dt=dt, var=q)
    Q[0:2, 0:2] = q2
    Q[2:4, 2:4] = q2
    return Q


def pos_rmse(est, truth):
    d = (est[:, 0] - truth[:, 0]) ** 2 + (est[:, 2] - truth[:, 2]) ** 2
    return math.sqrt(np.mean(d))


# --------------------------------------------------------------------------
# Table 1: linear KF on noisy position fixes

def run_linear(truth, zs, dt, q, r, x0):
    kf = KalmanFilter(dim_x=4, dim_z=2)
    kf.F = cv_F(dt)
    kf.Q = cv_Q(dt, q)
    kf.H = np.array([[1., 0, 0, 0], [0, 0, 1., 0]])
    kf.R = np.eye(2) * r ** 2
    kf.x = np.array(x0, dtype=float).reshape(4, 1) if np.ndim(kf.x) == 2 \
        else np.array(x0, dtype=float)
    kf.P = np.diag([r ** 2, 25., r ** 2, 25.])
    out = kf.batch_filter(zs)
    mu, cov = np.asarray(out[0]), np.asarray(out[1])
    sm = kf.rts_smoother(mu, cov)
    xs = np.asarray(sm[0])
    mu2 = mu.reshape(len(zs), 4)
    xs2 = xs.reshape(len(zs), 4)
    # NEES of the filtered state
    err = (mu2 - truth)
    nees = np.mean([e.dot(np.linalg.solve(P, e)) for e, P in zip(err, cov)])
    return pos_rmse(mu2, truth), pos_rmse(xs2, truth), float(nees)


# --------------------------------------------------------------------------
# Table 2: range-bearing radar, EKF vs UKF

def hx_radar(x, radar):
    dx, dy = x[0] - radar[0], x[2] - radar[1]
    return np.array([math.sqrt(dx * dx + dy * dy), math.atan2(dy, dx)])


def H_radar(x, radar):
    dx, dy = x[0] - radar[0], x[2] - radar[1]
    r2 = dx * dx + dy * dy
    r = math.sqrt(r2)
    return np.array([[dx / r, 0., dy / r, 0.],
                     [-dy / r2, 0., dx / r2, 0.]])


def wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi


def residual_z(a, b):
    y = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    y[1] = wrap(y[1])
    return y


def z_mean(sigmas, Wm):
    z = np.zeros(2)
    z[0] = np.sum(sigmas[:, 0] * Wm)
    z[1] = math.atan2(np.sum(np.sin(sigmas[:, 1]) * Wm),
                      np.sum(np.cos(sigmas[:, 1]) * Wm))
    return z


def run_radar(truth, zs, dt, q, sr, sb, radar, x0, P0, ukf_params):
    F = cv_F(dt)
    Q = cv_Q(dt, q)
    R = np.diag([sr ** 2, sb ** 2])

    ekf = ExtendedKalmanFilter(dim_x=4, dim_z=2)
    ekf.x = np.array(x0, dtype=float).reshape(4, 1)
    ekf.F, ekf.Q, ekf.R, ekf.P = F, Q, R, P0.copy()
    ex = np.zeros((len(zs), 4))
    for k, z in enumerate(zs):
        ekf.predict()
        ekf.update(z.reshape(2, 1), HJacobian=lambda x: H_radar(x.ravel(), radar),
                   Hx=lambda x: hx_radar(x.ravel(), radar).reshape(2, 1),
                   residual=lambda a, b: residual_z(a.ravel(), b.ravel()).reshape(2, 1))
        ex[k] = np.asarray(ekf.x).ravel()

    pts = MerweScaledSigmaPoints(4, alpha=ukf_params['alpha'],
                                 beta=ukf_params['beta'],
                                 kappa=ukf_params['kappa'])
    ukf = UnscentedKalmanFilter(dim_x=4, dim_z=2, dt=dt,
                                hx=lambda x: hx_radar(x, radar),
                                fx=lambda x, dt: F.dot(x),
                                points=pts, z_mean_fn=z_mean,
                                residual_z=residual_z)
    ukf.x = np.array(x0, dtype=float)
    ukf.P = P0.copy()
    ukf.Q, ukf.R = Q, R
    ux = np.zeros((len(zs), 4))
    for k, z in enumerate(zs):
        ukf.predict()
        ukf.update(z)
        ux[k] = ukf.x
    return pos_rmse(ex, truth), pos_rmse(ux, truth)


# --------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument('--config', required=True)
    p.add_argument('--out', default=None)
    a = p.parse_args(argv)
    with open(a.config) as fh:
        cfg = json.load(fh)
    out_path = a.out or os.path.join(
        'results', os.path.splitext(os.path.basename(a.config))[0] + '.json')

    seed, runs = int(cfg['seed']), int(cfg['runs'])
    dt, steps = float(cfg['dt']), int(cfg['steps'])
    sc = cfg['scenario']
    lin, rad = cfg['linear'], cfg['radar']
    t0 = time.time()

    qs = lin['q']
    kf_r = np.zeros((runs, len(qs)))
    rts_r = np.zeros((runs, len(qs)))
    nees = np.zeros((runs, len(qs)))
    meas_r = np.zeros(runs)
    ekf_r = np.zeros(runs)
    ukf_r = np.zeros(runs)
    radar = np.array(rad['position'], dtype=float)

    for run in range(runs):
        rs = RandomState(seed + run)
        truth = simulate_truth(rs, sc, steps, dt)
        # position fixes
        zs = truth[:, [0, 2]] + rs.randn(steps, 2) * lin['sigma_pos']
        meas_r[run] = math.sqrt(np.mean(np.sum((zs - truth[:, [0, 2]]) ** 2, axis=1)))
        x0 = [zs[0, 0], 0., zs[0, 1], 0.]
        for j, q in enumerate(qs):
            kf_r[run, j], rts_r[run, j], nees[run, j] = run_linear(
                truth, zs, dt, q, lin['sigma_pos'], x0)
        # radar
        zr = np.array([hx_radar(x, radar) for x in truth])
        zr[:, 0] += rs.randn(steps) * rad['sigma_range']
        zr[:, 1] += rs.randn(steps) * rad['sigma_bearing']
        r0, b0 = zr[0]
        x0r = [radar[0] + r0 * math.cos(b0), 0., radar[1] + r0 * math.sin(b0), 0.]
        P0 = np.diag([rad['sigma_range'] ** 2 + (r0 * rad['sigma_bearing']) ** 2, 100.,
                      rad['sigma_range'] ** 2 + (r0 * rad['sigma_bearing']) ** 2, 100.])
        ekf_r[run], ukf_r[run] = run_radar(truth, zr, dt, rad['q'],
                                           rad['sigma_range'], rad['sigma_bearing'],
                                           radar, x0r, P0, rad['ukf'])

    res = {'config': os.path.basename(a.config), 'seed': seed, 'runs': runs,
           'table1': {'measurement_rmse': float(meas_r.mean()), 'q': {}},
           'table2': {'ekf_rmse': float(ekf_r.mean()), 'ukf_rmse': float(ukf_r.mean()),
                      'ekf_rmse_worst': float(ekf_r.max()),
                      'ukf_rmse_worst': float(ukf_r.max())}}
    print('Table 1. CV Kalman filter and RTS smoother on position fixes '
          '(sigma = %g m, %d runs)' % (lin['sigma_pos'], runs))
    print('  measurements: RMSE %.3f m' % meas_r.mean())
    print('  %8s %10s %10s %8s' % ('q', 'KF', 'RTS', 'NEES'))
    for j, q in enumerate(qs):
        res['table1']['q'][str(q)] = {'kf_rmse': float(kf_r[:, j].mean()),
                                      'rts_rmse': float(rts_r[:, j].mean()),
                                      'nees': float(nees[:, j].mean())}
        print('  %8g %10.3f %10.3f %8.2f' % (q, kf_r[:, j].mean(), rts_r[:, j].mean(),
                                          nees[:, j].mean()))
    best = qs[int(np.argmin(kf_r.mean(axis=0)))]
    res['table1']['best_q'] = best
    print('  best q for the filter: %g' % best)
    print('Table 2. Range-bearing radar: position RMSE (m)')
    print('  EKF %.3f   UKF %.3f' % (ekf_r.mean(), ukf_r.mean()))
    res['wall_seconds'] = round(time.time() - t0, 2)

    d = os.path.dirname(out_path)
    if d and not os.path.isdir(d):
        os.makedirs(d)
    with open(out_path, 'w') as fh:
        json.dump(res, fh, indent=1, sort_keys=True)
    print('wrote %s' % out_path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
