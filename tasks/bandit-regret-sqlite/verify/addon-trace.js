'use strict';
// Preloaded (node -r) into the verifier's runs of bin/run.js: at exit,
// writes to $ADDON_TRACE what the process loaded as native code (every
// process.dlopen, and every .node file mapped) and, per addon, facts for
// the checks to judge: its ELF header, whether a Debian package owns it or
// a packaged file has its bytes, how many node-gyp objects lie in the
// build tree of its package, and where its SQLite code comes from.

var fs = require('fs');
var path = require('path');
var crypto = require('crypto');
var childProcess = require('child_process');

var opened = [];
var dlopen = process.dlopen;
process.dlopen = function (module, filename) {
  opened.push(filename);
  return dlopen.apply(this, arguments);
};

function mapped() {
  return fs.readFileSync('/proc/self/maps', 'utf8').split('\n')
    .map(function (l) { return l.replace(/^(\S+\s+){5}/, ''); })
    .filter(function (p) { return p.charAt(0) === '/'; });
}

function sha256(file) { return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'); }

function elf(b) {
  if (b.length < 20 || b.toString('latin1', 0, 4) !== '\x7fELF') return 'not ELF';
  var kind = { 1: 'relocatable', 2: 'executable', 3: 'shared object' }[b.readUInt16LE(16)] || 'other';
  var machine = { 62: 'x86-64', 183: 'aarch64' }[b.readUInt16LE(18)] || 'other machine';
  return 'ELF' + (b[4] === 2 ? '64' : '32') + ' ' + machine + ' ' + kind;
}

function dpkg(args) {
  try {
    return childProcess.execFileSync('dpkg-query', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (e) { return ''; }
}

// Files of installed Debian packages whose name ends in .node.
function packagedAddons() {
  return dpkg(['-S', '*.node']).split('\n').map(function (l) { return l.replace(/^[^:]*: /, ''); })
    .filter(function (p) { return /\.node$/.test(p) && fs.existsSync(p) && fs.statSync(p).isFile(); });
}

// The nearest directory above `file` that holds a package.json.
function packageRoot(file) {
  for (var d = path.dirname(file); d !== path.dirname(d); d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, 'package.json'))) return d;
  }
  return null;
}

// Object files that node-gyp compiled in the package's tree (build/, or
// build-tmp-napi-v6/ under node-pre-gyp), its own dependencies left out.
function objects(dir) {
  var n = 0;
  (function walk(d) {
    var entries;
    try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch (e) { return; }
    entries.forEach(function (e) {
      if (e.isDirectory()) { if (e.name !== 'node_modules') walk(path.join(d, e.name)); }
      else if (e.isFile() && /\.o$/.test(e.name) && /\/obj\.target(\/|$)/.test(d)) n++;
    });
  })(dir);
  return n;
}

process.on('exit', function () {
  var report;
  try {
    var maps = mapped();
    var files = opened.concat(maps.filter(function (p) { return /\.node$/.test(p); }))
      .map(function (p) { return fs.realpathSync(p); })
      .filter(function (p, i, all) { return all.indexOf(p) === i; });
    var packaged = packagedAddons().map(function (p) { return { path: p, sha256: sha256(p) }; });
    var libsqlite = maps.some(function (p) { return /\/libsqlite3\.so[.0-9]*$/.test(p); });
    report = {
      count: files.length,
      addons: files.map(function (file) {
        var bytes = fs.readFileSync(file), digest = sha256(file);
        var copy = packaged.filter(function (p) { return p.sha256 === digest; })[0];
        var root = packageRoot(file);
        var sqlite = bytes.indexOf('SQLite format 3') >= 0 ? 'bundled'
          : libsqlite && bytes.indexOf('sqlite3_prepare_v2') >= 0 ? 'libsqlite3' : 'none';
        return {
          path: file,
          elf: elf(bytes),
          dpkg_owner: dpkg(['-S', file]).split(':')[0] || 'none',
          copy_of: copy ? copy.path : 'none',
          package_root: root,
          build_objects: root ? objects(root) : 0,
          sqlite: sqlite,
          has_sqlite: sqlite === 'none' ? 'no' : 'yes'
        };
      })
    };
  } catch (e) {
    report = { error: String(e && e.stack || e) };
  }
  fs.writeFileSync(process.env.ADDON_TRACE, JSON.stringify(report, null, 2) + '\n');
});
