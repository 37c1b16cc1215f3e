#!/bin/bash
# Run the deployed solver on an input deck the agent never saw.
set -eo pipefail
./qwell < "$CLEANROOM_VERIFY/probe.in" > "$CLEANROOM_OUT/probe.out"
cat "$CLEANROOM_OUT/probe.out"
