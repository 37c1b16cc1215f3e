#!/bin/bash
# Run the deployed psort on inputs the agent never saw (odd N, other seed and K).
set -eo pipefail
mpirun -np 2 ./psort -n 1000003 -d all -k 5 -s 4242 -o "$CLEANROOM_OUT/probe_k5.csv"
mpirun -np 2 ./psort -n 1000003 -d all -k 40 -s 4242 -o "$CLEANROOM_OUT/probe_k40.csv"
cat "$CLEANROOM_OUT/probe_k5.csv" "$CLEANROOM_OUT/probe_k40.csv"
