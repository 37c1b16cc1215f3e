#!/bin/bash
# Reference deployment for bandit-regret-sqlite.
# Snags:
#  - package.json pins sqlite3 3.1.13 (native addon, nan ~2.7, for Node 4-6):
#    node-pre-gyp's prebuilt download fails (host unreachable), the source
#    build needs make/g++ and then `python` (2) for its action_before_build,
#    and its C++ does not compile against Node 18's V8 anyway.
#    Fixes that work: Debian's node-sqlite3 (5.1.x, built for Debian's Node)
#    as done here, or sqlite3 5.1.x from npm built from source with
#    `npm install --nodedir=/usr` (its own node-gyp otherwise downloads the
#    headers from nodejs.org, which is unreachable) plus make, g++, python3.
#  - bin/run.js calls util.puts, removed in Node 12 (TypeError).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends nodejs npm node-sqlite3

cd /workspace/artifact
# use the system sqlite3 binding instead of the npm pin
node -e '
const fs = require("fs");
const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
delete p.dependencies.sqlite3;
fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");'
npm install --omit=dev --no-audit --no-fund
node -e 'require("sqlite3"); console.log("sqlite3 from", require.resolve("sqlite3"))'

sed -i 's/util\.puts(util\.format(/console.log(util.format(/' bin/run.js

bash -lc 'cd /workspace/artifact && npm run table2'
