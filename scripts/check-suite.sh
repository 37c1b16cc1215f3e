#!/usr/bin/env bash
# The full check of the bundled tasks (tasks/ and examples/tasks/): the
# schema, the artifact, no leaked expected value, the oracle passes (fails,
# on a negative control), nop fails, a second verification agrees, and
# every substitute of the battery fails. Prints the table and the time.
# Run as root from the repository (about 20 minutes on 2 cores: 1174 s
# for 21 tasks and 54 substitutes with JOBS=2).
#
# The sandbox skips the tasks that need a machine of their own
# (environment.machine); they are checked again on the vm backend, unless
# VM=0 (under TCG, several minutes a task).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked
start=$(date +%s)
status=0
target/release/cleanroom tasks check tasks/ examples/tasks/ --jobs "${JOBS:-2}" || status=$?
echo "suite check: $(( $(date +%s) - start )) s, exit $status"
machines=()
for toml in tasks/*/task.toml examples/tasks/*/task.toml; do
    grep -Eq '^machine *= *true' "$toml" && machines+=("$(dirname "$toml")")
done
if [ "${VM:-1}" != 0 ] && [ ${#machines[@]} -gt 0 ]; then
    start=$(date +%s)
    target/release/cleanroom tasks check "${machines[@]}" --backend vm --jobs "${JOBS:-2}" || status=$?
    echo "machine tasks on the vm backend: $(( $(date +%s) - start )) s, exit $status"
fi
exit $status
