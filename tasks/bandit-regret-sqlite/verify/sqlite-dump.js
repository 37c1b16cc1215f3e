'use strict';
// The verifier's own reader of a SQLite database file (the file format,
// https://sqlite.org/fileformat.html), so that what the runs wrote is read
// without the deployment's SQLite: the header, the schema as sqlite_master
// holds it, and per table the row count and a sha256 of its rows in a
// fixed order (sorted by value, so the order of the inserts does not
// matter). Prints JSON; the checks judge it.
//
//   node sqlite-dump.js results/runs.db > runs-db.json

var fs = require('fs');
var crypto = require('crypto');

var buf = fs.readFileSync(process.argv[2]);
var pageSize = buf.readUInt16BE(16) === 1 ? 65536 : buf.readUInt16BE(16);
var usable = pageSize - buf[20];

function page(n) { return buf.subarray((n - 1) * pageSize, n * pageSize); }

// A varint at p: [value, next offset]. Values stay below 2^53 here.
function varint(b, p) {
  var v = 0;
  for (var i = 0; i < 8; i++) {
    v = v * 128 + (b[p + i] & 0x7f);
    if (!(b[p + i] & 0x80)) return [v, p + i + 1];
  }
  return [v * 256 + b[p + 8], p + 9];
}

// The payload of a table-leaf cell, following its overflow chain.
function payload(pg, p, size) {
  var maxLocal = usable - 35;
  var local = size;
  if (size > maxLocal) {
    var minLocal = Math.floor((usable - 12) * 32 / 255) - 23;
    local = minLocal + (size - minLocal) % (usable - 4);
    if (local > maxLocal) local = minLocal;
  }
  var parts = [pg.subarray(p, p + local)], got = local;
  var next = local < size ? pg.readUInt32BE(p + local) : 0;
  while (next && got < size) {
    var ov = page(next), n = Math.min(size - got, usable - 4);
    parts.push(ov.subarray(4, 4 + n));
    got += n;
    next = ov.readUInt32BE(0);
  }
  return Buffer.concat(parts);
}

function record(b) {
  var h = varint(b, 0), end = h[0], p = h[1], types = [];
  while (p < end) { var t = varint(b, p); types.push(t[0]); p = t[1]; }
  return types.map(function (t) {
    var v;
    if (t === 0) v = null;
    else if (t >= 1 && t <= 6) {
      var len = [0, 1, 2, 3, 4, 6, 8][t];
      v = Number(b.subarray(p, p + len).reduce(function (acc, x) { return acc * 256n + BigInt(x); }, 0n));
      if (b[p] & 0x80) v -= Math.pow(2, 8 * len);
      p += len;
    } else if (t === 7) { v = b.readDoubleBE(p); p += 8; }
    else if (t === 8) v = 0;
    else if (t === 9) v = 1;
    else if (t >= 12) {
      var n = (t - 12) >> 1;
      v = t % 2 ? b.toString('utf8', p, p + n) : b.subarray(p, p + n).toString('hex');
      p += n;
    } else throw new Error('serial type ' + t);
    return v;
  });
}

// Every row of the table b-tree rooted at page `root`, as [rowid, values].
function rows(root) {
  var out = [];
  (function walk(n) {
    var pg = page(n), h = n === 1 ? 100 : 0, type = pg[h], cells = pg.readUInt16BE(h + 3);
    var ptrs = h + (type === 5 ? 12 : 8);
    for (var i = 0; i < cells; i++) {
      var c = pg.readUInt16BE(ptrs + 2 * i);
      if (type === 5) { walk(pg.readUInt32BE(c)); continue; }
      if (type !== 13) throw new Error('page ' + n + ': not a table b-tree page (type ' + type + ')');
      var size = varint(pg, c), rowid = varint(pg, size[1]);
      out.push([rowid[0], record(payload(pg, rowid[1], size[0]))]);
    }
    if (type === 5) walk(pg.readUInt32BE(h + 8));
  })(root);
  return out;
}

function compare(a, b) {
  for (var i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (typeof a[i] === typeof b[i]) return a[i] < b[i] ? -1 : 1;
    return typeof a[i] < typeof b[i] ? -1 : 1;
  }
  return 0;
}

var master = rows(1).map(function (r) {
  return { type: r[1][0], name: r[1][1], root: r[1][3], sql: r[1][4] };
});
var tables = {};
master.filter(function (m) { return m.type === 'table'; }).forEach(function (m) {
  // An INTEGER PRIMARY KEY column is the rowid, stored as NULL in the record.
  var alias = /^CREATE TABLE \w+ \((\w+) INTEGER PRIMARY KEY/i.test(m.sql);
  var values = rows(m.root).map(function (r) {
    if (alias) r[1][0] = r[0];
    return r[1];
  }).sort(compare);
  var text = values.map(function (v) { return JSON.stringify(v); }).join('\n');
  tables[m.name] = { rows: values.length, sha256: crypto.createHash('sha256').update(text).digest('hex') };
});

console.log(JSON.stringify({
  header: buf.toString('latin1', 0, 15) + (buf[15] === 0 ? '' : ' (no NUL)'),
  page_size: pageSize,
  sqlite_version_number: buf.readUInt32BE(96),
  schema: master.map(function (m) { return m.sql; }).join('\n'),
  tables: tables
}, null, 2));
