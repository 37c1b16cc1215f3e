'use strict';
// Results store: one SQLite file per experiment.
var sqlite3 = require('sqlite3');

var SCHEMA = [
  'CREATE TABLE runs (id INTEGER PRIMARY KEY, policy TEXT, label TEXT, seed INTEGER, ' +
  '  horizon INTEGER, reward INTEGER, best_frac REAL)',
  'CREATE TABLE regret (run INTEGER, t INTEGER, regret REAL)'
];

function open(file, fresh, cb) {
  var db = new sqlite3.Database(file, function (err) {
    if (err) return cb(err);
    if (!fresh) return cb(null, db);
    db.serialize(function () {
      db.run('DROP TABLE IF EXISTS runs');
      db.run('DROP TABLE IF EXISTS regret');
      SCHEMA.forEach(function (s) { db.run(s); });
      db.run('SELECT 1', function (e) { cb(e, db); });
    });
  });
}

module.exports = { open: open };
