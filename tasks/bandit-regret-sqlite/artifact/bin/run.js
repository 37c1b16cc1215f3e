#!/usr/bin/env node
'use strict';
// Monte-Carlo runs of every policy of the config; one row per (policy, seed)
// in the `runs` table and the regret at each checkpoint in `regret`.
//
//   node bin/run.js --config configs/table2.json --db results/runs.db

var fs = require('fs');
var path = require('path');
var util = require('util');
var argv = require('minimist')(process.argv.slice(2));
var bandits = require('../lib/bandits');
var store = require('../lib/store');

var cfg = JSON.parse(fs.readFileSync(argv.config, 'utf8'));
var dbFile = argv.db || 'results/runs.db';
if (!fs.existsSync(path.dirname(dbFile))) fs.mkdirSync(path.dirname(dbFile));

store.open(dbFile, true, function (err, db) {
  if (err) throw err;
  var id = 0, t0 = Date.now();
  db.serialize(function () {
    db.run('BEGIN');
    var insRun = db.prepare('INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)');
    var insReg = db.prepare('INSERT INTO regret VALUES (?, ?, ?)');
    cfg.policies.forEach(function (p) {
      for (var s = 0; s < cfg.n_runs; s++) {
        var seed = cfg.seed + s;
        var res = bandits.simulate(cfg.means, p.policy, p.options, cfg.horizon,
                                   cfg.checkpoints, seed);
        id++;
        insRun.run(id, p.policy, p.label, seed, cfg.horizon, res.reward, res.best_frac);
        cfg.checkpoints.forEach(function (t) { insReg.run(id, t, res.regret[t]); });
      }
      util.puts(util.format('%s: %d runs done (%d ms)', p.label, cfg.n_runs, Date.now() - t0));
    });
    insRun.finalize();
    insReg.finalize();
    db.run('COMMIT', function (e) {
      if (e) throw e;
      db.close();
      console.log('wrote %d runs to %s', id, dbFile);
    });
  });
});
