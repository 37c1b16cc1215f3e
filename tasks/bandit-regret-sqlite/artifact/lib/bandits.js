'use strict';
// Bernoulli bandits and three index/sampling policies.
// All randomness goes through the `rng` passed in (a seedrandom PRNG), so a
// run is a pure function of (config, seed).

var seedrandom = require('seedrandom');

// ------------------------------------------------------------ distributions

function normal(rng) {
  // Box-Muller; one of the pair is thrown away to keep the stream simple
  var u = 0, v = rng();
  while (u === 0) u = rng();
  return Math.sqrt(-2.0 * Math.log(u)) * Math.cos(2.0 * Math.PI * v);
}

// Marsaglia & Tsang (2000), shape >= 1
function gamma(rng, shape) {
  var d = shape - 1.0 / 3.0, c = 1.0 / Math.sqrt(9.0 * d);
  for (;;) {
    var x, v;
    do {
      x = normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    var u = rng();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

function beta(rng, a, b) {
  var x = gamma(rng, a), y = gamma(rng, b);
  return x / (x + y);
}

// ------------------------------------------------------------ policies

function argmax(xs) {
  var best = 0;
  for (var i = 1; i < xs.length; i++) if (xs[i] > xs[best]) best = i;
  return best;
}

function EpsilonGreedy(k, rng, opts) {
  this.k = k; this.rng = rng; this.eps = opts.epsilon;
  this.n = new Array(k).fill(0); this.s = new Array(k).fill(0);
}
EpsilonGreedy.prototype.select = function (t) {
  for (var i = 0; i < this.k; i++) if (this.n[i] === 0) return i;
  if (this.rng() < this.eps) return Math.floor(this.rng() * this.k);
  var means = this.s.map(function (s, i) { return s / this.n[i]; }, this);
  return argmax(means);
};
EpsilonGreedy.prototype.update = function (arm, r) { this.n[arm]++; this.s[arm] += r; };

function UCB1(k, rng, opts) {
  this.k = k; this.c = opts.c || 2.0;
  this.n = new Array(k).fill(0); this.s = new Array(k).fill(0);
}
UCB1.prototype.select = function (t) {
  for (var i = 0; i < this.k; i++) if (this.n[i] === 0) return i;
  var idx = new Array(this.k);
  for (var j = 0; j < this.k; j++)
    idx[j] = this.s[j] / this.n[j] + Math.sqrt(this.c * Math.log(t) / this.n[j]);
  return argmax(idx);
};
UCB1.prototype.update = EpsilonGreedy.prototype.update;

function Thompson(k, rng, opts) {
  this.k = k; this.rng = rng;
  this.a = new Array(k).fill(opts.prior_a || 1); this.b = new Array(k).fill(opts.prior_b || 1);
}
Thompson.prototype.select = function () {
  var draws = new Array(this.k);
  for (var i = 0; i < this.k; i++) draws[i] = beta(this.rng, this.a[i], this.b[i]);
  return argmax(draws);
};
Thompson.prototype.update = function (arm, r) { if (r) this.a[arm]++; else this.b[arm]++; };

var POLICIES = { 'eps-greedy': EpsilonGreedy, 'ucb1': UCB1, 'thompson': Thompson };

// ------------------------------------------------------------ one run

// Returns the pseudo-regret sum_t (mu* - mu_{a_t}) at each checkpoint and
// the fraction of pulls of the best arm.
function simulate(means, policyName, opts, horizon, checkpoints, seed) {
  var envRng = seedrandom('env-' + seed);
  var polRng = seedrandom('policy-' + policyName + '-' + seed);
  var Policy = POLICIES[policyName];
  if (!Policy) throw new Error('unknown policy ' + policyName);
  var pol = new Policy(means.length, polRng, opts || {});
  var best = Math.max.apply(null, means), bestArm = means.indexOf(best);
  var regret = 0, bestPulls = 0, reward = 0, out = {}, ci = 0;
  for (var t = 1; t <= horizon; t++) {
    var a = pol.select(t);
    var r = envRng() < means[a] ? 1 : 0;
    pol.update(a, r);
    regret += best - means[a];
    reward += r;
    if (a === bestArm) bestPulls++;
    if (t === checkpoints[ci]) { out[t] = regret; ci++; }
  }
  return { regret: out, reward: reward, best_frac: bestPulls / horizon };
}

module.exports = { simulate: simulate, POLICIES: POLICIES, beta: beta, gamma: gamma };
