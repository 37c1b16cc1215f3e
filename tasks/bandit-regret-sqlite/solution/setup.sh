#!/bin/bash
# Reference deployment for bandit-regret-sqlite.
# Snags:
#  - package.json pins sqlite3 3.1.13 (native addon, nan ~2.7, for Node 4-6):
#    node-pre-gyp's prebuilt download fails (host unreachable), the source
#    build needs make/g++ and then `python` (2) for its action_before_build,
#    and its C++ does not compile against Node 18's V8 anyway.
#    Fix: sqlite3 5.1.7 (N-API) from npm, compiled here from source: its
#    prebuild-install download fails too (--build-from-source skips it), and
#    node-gyp must be given Debian's headers with --nodedir=/usr (it would
#    otherwise download them from nodejs.org, which is unreachable); make,
#    g++ and python3 build it. Debian's node-sqlite3 is a prebuilt binary,
#    which the task does not accept.
#  - bin/run.js calls util.puts, removed in Node 12 (TypeError).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends nodejs npm libnode-dev make g++ python3

cd /workspace/artifact
node -e '
const fs = require("fs");
const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
p.dependencies.sqlite3 = "5.1.7";
fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");'
npm install --omit=dev --no-audit --no-fund --build-from-source --nodedir=/usr
node -e 'require("sqlite3"); console.log("sqlite3 from", require.resolve("sqlite3"))'

sed -i 's/util\.puts(util\.format(/console.log(util.format(/' bin/run.js

bash -lc 'cd /workspace/artifact && npm run table2'
