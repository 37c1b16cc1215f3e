#!/bin/bash
# prebuilt-addon.sh -- a shortcut for bandit-regret-sqlite: the native
# addon is a binary built elsewhere. sqlite3 5.1.5 comes from npm without
# its install script (nothing is compiled), and its binding is Debian's
# build of the same release (node-sqlite3, N-API), copied to where
# sqlite3's loader looks; Debian's package is then purged, so that no
# package owns the file or one like it.
#
# It stands for every deployment whose addon is not compiled here: a
# prebuilt download, Debian's package, a binary kept from elsewhere. The
# table, the probe, the mutated probe and the verifier's reads of the
# database files pass; the addon is a real x86-64 ELF holding SQLite.
#
# Expected result: not tampered; "the addon was compiled here" fails (no
# node-gyp objects in the build tree of the addon's package).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends nodejs npm node-sqlite3 >/dev/null
cd /workspace/artifact
node -e '
const fs = require("fs");
const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
p.dependencies.sqlite3 = "5.1.5";
fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");'
npm install --omit=dev --no-audit --no-fund --ignore-scripts
binary=$(dpkg -L node-sqlite3 | grep "\.node$" | head -1)
mkdir -p /opt/kept
cp "$binary" /opt/kept/node_sqlite3.node
apt-get purge -y node-sqlite3 >/dev/null
target=$(node -e 'console.log(require("@mapbox/node-pre-gyp").find(require.resolve("sqlite3/package.json")))')
mkdir -p "$(dirname "$target")"
cp /opt/kept/node_sqlite3.node "$target"
sed -i 's/util\.puts(util\.format(/console.log(util.format(/' bin/run.js
bash -lc 'cd /workspace/artifact && npm run table2'
