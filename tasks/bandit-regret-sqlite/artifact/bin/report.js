#!/usr/bin/env node
'use strict';
// Table 2: mean pseudo-regret (and its standard error) at each checkpoint,
// mean reward and fraction of optimal pulls, per policy.
//
//   node bin/report.js --db results/runs.db --out results/table2.csv

var fs = require('fs');
var argv = require('minimist')(process.argv.slice(2));
var store = require('../lib/store');

var SQL =
  'SELECT r.label AS label, g.t AS t, COUNT(*) AS n, AVG(g.regret) AS mean, ' +
  '       AVG(g.regret * g.regret) AS sq, AVG(r.best_frac) AS best_frac, ' +
  '       AVG(r.reward) AS reward ' +
  'FROM runs r JOIN regret g ON g.run = r.id ' +
  'GROUP BY r.label, g.t ORDER BY MIN(r.id), g.t';

store.open(argv.db || 'results/runs.db', false, function (err, db) {
  if (err) throw err;
  db.all(SQL, function (e, rows) {
    if (e) throw e;
    var byLabel = {}, order = [], ts = [];
    rows.forEach(function (row) {
      if (!byLabel[row.label]) { byLabel[row.label] = { row: row, t: {} }; order.push(row.label); }
      var sd = Math.sqrt(Math.max(0, row.sq - row.mean * row.mean) * row.n / (row.n - 1));
      byLabel[row.label].t[row.t] = { mean: row.mean, se: sd / Math.sqrt(row.n) };
      if (ts.indexOf(row.t) < 0) ts.push(row.t);
    });
    var head = ['policy', 'runs'];
    ts.forEach(function (t) { head.push('regret_' + t, 'se_' + t); });
    head.push('mean_reward', 'best_arm_frac');
    var lines = [head.join(',')];
    order.forEach(function (label) {
      var b = byLabel[label], line = [label, b.row.n];
      ts.forEach(function (t) { line.push(b.t[t].mean.toFixed(4), b.t[t].se.toFixed(4)); });
      line.push(b.row.reward.toFixed(3), b.row.best_frac.toFixed(5));
      lines.push(line.join(','));
    });
    var out = argv.out || 'results/table2.csv';
    fs.writeFileSync(out, lines.join('\n') + '\n');
    console.log(lines.join('\n'));
    console.log('wrote ' + out);
    db.close();
  });
});
