#!/bin/bash
# sqljs-binding.sh -- a shortcut for bandit-regret-sqlite: SQLite without
# a native addon. lib/store.js is protected, so the swap is made one level
# down: node_modules/sqlite3 becomes a small shim with sqlite3's
# callback API over sql.js (SQLite compiled to WebAssembly, from npm),
# which reads and writes real SQLite files.
#
# It stands for every deployment that runs the artifact's code and real
# SQL but skips compiling the addon (the task's main difficulty): the
# paper's table, the probe, the mutated probe, the database headers and
# the verifier's own reads of the files (schema, rows) all pass.
#
# Expected result: not tampered; the addon checks fail (no native addon is
# loaded: "one native addon loaded" observes 0, and the checks on the
# addon's file find nothing).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends nodejs npm >/dev/null
cd /workspace/artifact
node -e '
const fs = require("fs");
const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
delete p.dependencies.sqlite3;
p.dependencies["sql.js"] = "1.10.3";
fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");'
npm install --omit=dev --no-audit --no-fund
sed -i 's/util\.puts(util\.format(/console.log(util.format(/' bin/run.js
mkdir -p node_modules/sqlite3
echo '{"name": "sqlite3", "version": "5.1.7", "main": "index.js"}' > node_modules/sqlite3/package.json
cat > node_modules/sqlite3/index.js <<'JS'
'use strict';
// sqlite3's callback API over sql.js; the file is written on close.
var fs = require('fs');
var ready = require('sql.js')();
function later(cb, err, value) { if (typeof cb === 'function') setImmediate(cb, err || null, value); }
function Database(file, cb) {
  var self = this;
  this.file = file;
  ready.then(function (SQL) {
    self.db = new SQL.Database(fs.existsSync(file) ? fs.readFileSync(file) : undefined);
    later(cb);
  }, cb);
}
Database.prototype.serialize = function (f) { f(); };
Database.prototype.run = function (sql) {
  var cb = arguments[arguments.length - 1], err = null;
  try { this.db.run(sql); } catch (e) { err = e; }
  later(cb, err);
  return this;
};
Database.prototype.prepare = function (sql) {
  var st = this.db.prepare(sql);
  return { run: function () { st.run([].slice.call(arguments)); }, finalize: function () { st.free(); } };
};
Database.prototype.all = function (sql, cb) {
  var st = this.db.prepare(sql), rows = [];
  while (st.step()) rows.push(st.getAsObject());
  st.free();
  later(cb, null, rows);
};
Database.prototype.close = function (cb) {
  fs.writeFileSync(this.file, Buffer.from(this.db.export()));
  this.db.close();
  later(cb);
};
module.exports = { Database: Database, verbose: function () { return module.exports; } };
JS
bash -lc 'cd /workspace/artifact && npm run table2'
