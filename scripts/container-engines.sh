#!/usr/bin/env bash
# Container engines on this machine for the container backend's tests (run
# as root): Podman's API service, which serves the Docker Engine API.
#
#   scripts/container-engines.sh start   installs podman, runc and catatonit
#                                        (apt-get) where missing, and serves
#                                        Podman's API at $SOCKETS/podman.sock
#   scripts/container-engines.sh stop    stops it, and removes every container
#                                        and image the tests left
#
# Podman runs its containers with runc (crun fails on cgroup v1 hosts); the
# service keeps running until stopped (--time=0).
set -euo pipefail

SOCKETS=/run/cleanroom-test
PODMAN_SOCKET=$SOCKETS/podman.sock
PIDFILE=$SOCKETS/podman.pid

log() { echo "container-engines.sh: $*" >&2; }

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

start() {
    if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! [ -x /usr/libexec/podman/catatonit ]; then
        log "installing podman, runc and catatonit (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q podman runc catatonit >/dev/null \
            || { apt-get update -q >/dev/null && apt-get install -y -q podman runc catatonit >/dev/null; }
    fi
    mkdir -p "$SOCKETS"
    if running; then
        log "Podman's API service is running already at $PODMAN_SOCKET"
        return
    fi
    rm -f "$PODMAN_SOCKET"
    # Run from its own directory: conmon writes a file `oom` into the
    # current directory when a container runs out of memory.
    (cd "$SOCKETS" && exec setsid podman --runtime runc system service --time=0 "unix://$PODMAN_SOCKET" \
        >"$SOCKETS/podman.log" 2>&1 </dev/null) &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 100); do
        if [ -S "$PODMAN_SOCKET" ]; then
            log "Podman's API service at $PODMAN_SOCKET"
            return
        fi
        running || break
        sleep 0.1
    done
    log "Podman's API service did not answer; its log:"
    cat "$SOCKETS/podman.log" >&2
    exit 1
}

stop() {
    if command -v podman >/dev/null; then
        # What the tests and the container backend made carries cleanroom's
        # labels; the images they imported are named cleanroom*/.
        for label in cleanroom.owner cleanroom.env; do
            podman ps -aq --filter "label=$label" | xargs -r podman rm -f >/dev/null 2>&1 || true
        done
        for reference in 'cleanroom-test/*' 'cleanroom/*'; do
            podman images -q --filter "reference=$reference" | xargs -r podman rmi -f >/dev/null 2>&1 || true
        done
    fi
    if running; then
        kill "$(cat "$PIDFILE")"
    fi
    rm -f "$PIDFILE" "$PODMAN_SOCKET"
    log "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
