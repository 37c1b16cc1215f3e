# Harbor (PyPI `harbor`, Terminal-Bench's harness), installed once into
# /var/cache/cleanroom/harbor-$HARBOR_VERSION, a venv of a CPython found as
# the agents' installers find one (CLEANROOM_PYTHON_SRC, /usr/bin, pyenv's,
# /usr/local/bin; Harbor needs 3.12 or newer). Sourced by the scripts that
# use it; needs agents/_lib/common.sh sourced first (find_python).
HARBOR_VERSION=0.26.0
HARBOR_VENV=/var/cache/cleanroom/harbor-$HARBOR_VERSION

# harbor_venv [PIP_SPEC]...: makes sure Harbor, and each PIP_SPEC (a
# `name==version` to add), are in $HARBOR_VENV. One installer at a time
# (tests install concurrently); the others wait and find its venv.
harbor_venv() {
    mkdir -p "$(dirname "$HARBOR_VENV")"
    exec 9>"$HARBOR_VENV.lock"
    flock 9
    if [ ! -f "$HARBOR_VENV/.installed" ]; then
        local python
        python=$(find_python 3.12 3.13) || return 1
        rm -rf "$HARBOR_VENV"
        env -i PATH=/usr/bin:/bin "$python" -m venv "$HARBOR_VENV" >&2 \
            && "$HARBOR_VENV/bin/pip" install -q "harbor==$HARBOR_VERSION" >&2 \
            && touch "$HARBOR_VENV/.installed" || return 1
    fi
    local spec
    for spec in "$@"; do
        "$HARBOR_VENV/bin/pip" show "${spec%%==*}" 2>/dev/null | grep -qx "Version: ${spec#*==}" \
            || "$HARBOR_VENV/bin/pip" install -q "$spec" >&2 || return 1
    done
    flock -u 9
    exec 9>&-
}
