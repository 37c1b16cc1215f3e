#!/bin/bash
# Replay a block trace the agent never saw through the deployed simulator.
set -eo pipefail
bin/cachesim -trace "$CLEANROOM_VERIFY/probe_msr.csv" -format msr \
    -sizes 512,2048 -policies lru,clock,arc,lirs -opt \
    -out "$CLEANROOM_OUT/probe.csv"
bin/cachesim -trace "$CLEANROOM_VERIFY/probe_msr.csv" -format msr -reads-only \
    -sizes 1024 -policies lru,lirs > "$CLEANROOM_OUT/probe_reads.csv"
cat "$CLEANROOM_OUT/probe.csv" "$CLEANROOM_OUT/probe_reads.csv"
