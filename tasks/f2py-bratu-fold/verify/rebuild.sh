#!/bin/bash
# Rebuild the extension from the tree with the artifact's own build and the
# deployment's python3, then load it with module.py and say where it came
# from. Usage: rebuild.sh TAG (the outputs are $CLEANROOM_OUT/TAG-*).
#
# The facts about the loaded file are read here, outside Python: the
# package's own code decides what `bratu._bratu` is, and a stand-in can name
# any file it likes as its __file__.
set -eo pipefail
tag=$1
stamp=$(mktemp)
rm -rf build bratu/_bratu*.so
python3 setup.py build_ext --inplace > "$CLEANROOM_OUT/$tag-build.log" 2>&1 ||
    { tail -n 40 "$CLEANROOM_OUT/$tag-build.log"; exit 1; }
python3 "$CLEANROOM_VERIFY/module.py" > "$CLEANROOM_OUT/$tag-module.json"
so=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["file"])' \
    "$CLEANROOM_OUT/$tag-module.json")
echo "module: $so"
case "$so" in
    "$CLEANROOM_ARTIFACT"/bratu/_bratu*.so) echo "in tree: yes" ;;
    *) echo "in tree: no" ;;
esac
echo "magic: $(head -c 4 "$so" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
if [ "$so" -nt "$stamp" ]; then echo "built now: yes"; else echo "built now: no"; fi
rm -f "$stamp"
