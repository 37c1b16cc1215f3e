#!/bin/bash
# After the harness's secret change to the solver's source: rebuild it with
# the deployment the agent made and run it on the probe deck. Only a build
# of this artifact's own source gives the shifted eigenvalues.
set -eo pipefail
rm -f qwell ./*.o
make
./qwell < "$CLEANROOM_VERIFY/probe.in" > "$CLEANROOM_OUT/probe-mutated.out"
cat "$CLEANROOM_OUT/probe-mutated.out"
