#!/bin/bash
# Rebuild the extension from the tree as instruction.md says (regenerate
# hmmlearn/_hmmc.c from _hmmc.pyx with the deployment's cython, then compile
# it in place with the artifact's setup.py and the deployment's python3), load
# it with module.py and say where it came from. Usage: rebuild.sh TAG (the
# outputs are $CLEANROOM_OUT/TAG-*).
#
# The facts about the loaded file are read here, outside Python: the
# package's own code decides what `hmmlearn._hmmc` is, and a stand-in can
# name any file it likes as its __file__.
set -eo pipefail
tag=$1
stamp=$(mktemp)
log="$CLEANROOM_OUT/$tag-build.log"
rm -rf build hmmlearn/_hmmc*.so
{ cython hmmlearn/_hmmc.pyx && python3 setup.py build_ext --inplace; } > "$log" 2>&1 ||
    { tail -n 40 "$log"; exit 1; }
python3 "$CLEANROOM_VERIFY/module.py" > "$CLEANROOM_OUT/$tag-module.json"
so=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["file"])' \
    "$CLEANROOM_OUT/$tag-module.json")
echo "module: $so"
case "$so" in
    "$CLEANROOM_ARTIFACT"/hmmlearn/_hmmc*.so) echo "in tree: yes" ;;
    *) echo "in tree: no" ;;
esac
echo "magic: $(head -c 4 "$so" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
if [ "$so" -nt "$stamp" ]; then echo "built now: yes"; else echo "built now: no"; fi
rm -f "$stamp"
