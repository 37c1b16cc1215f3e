#!/usr/bin/env bash
# Container engines on this machine for the container backend's tests (run
# as root): Podman's API service and Docker's dockerd, both serving the
# Docker Engine API, each at a socket of its own.
#
#   scripts/container-engines.sh start   installs podman, runc, catatonit and
#                                        docker.io (apt-get) where missing, and
#                                        serves Podman's API at
#                                        $SOCKETS/podman.sock and Docker's at
#                                        $SOCKETS/docker.sock
#   scripts/container-engines.sh stop    stops them, and removes every
#                                        container and image the tests left
#
# Podman runs its containers with runc (crun fails on cgroup v1 hosts); the
# service keeps running until stopped (--time=0). dockerd keeps its images
# under $DOCKER_ROOT, apart from a system Docker's, and touches neither the
# host's firewall nor its bridges: the backend's containers have no network
# of the engine's (--iptables=false --bridge=none).
set -euo pipefail

SOCKETS=/run/cleanroom-test
PODMAN_SOCKET=$SOCKETS/podman.sock
DOCKER_SOCKET=$SOCKETS/docker.sock
DOCKER_ROOT=/var/lib/cleanroom-test-docker

log() { echo "container-engines.sh: $*" >&2; }

running() { [ -f "$SOCKETS/$1.pid" ] && kill -0 "$(cat "$SOCKETS/$1.pid")" 2>/dev/null; }

# serve NAME SOCKET COMMAND...: runs COMMAND in its own session (from
# $SOCKETS: conmon writes a file `oom` into the current directory when a
# container runs out of memory) until SOCKET answers.
serve() {
    local name=$1 socket=$2
    shift 2
    if running "$name"; then
        log "$name is running already at $socket"
        return
    fi
    rm -f "$socket"
    (cd "$SOCKETS" && exec setsid "$@" >"$SOCKETS/$name.log" 2>&1 </dev/null) &
    echo $! >"$SOCKETS/$name.pid"
    for _ in $(seq 1 300); do
        if [ -S "$socket" ]; then
            log "$name at $socket"
            return
        fi
        running "$name" || break
        sleep 0.1
    done
    log "$name did not answer at $socket; its log:"
    cat "$SOCKETS/$name.log" >&2
    exit 1
}

start() {
    if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! [ -x /usr/bin/catatonit ] \
        || ! command -v dockerd >/dev/null; then
        log "installing podman, runc, catatonit and docker.io (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        local packages=(podman runc catatonit docker.io)
        apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null \
            || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null; }
    fi
    mkdir -p "$SOCKETS"
    serve podman "$PODMAN_SOCKET" podman --runtime runc system service --time=0 "unix://$PODMAN_SOCKET"
    serve docker "$DOCKER_SOCKET" dockerd --host "unix://$DOCKER_SOCKET" --data-root "$DOCKER_ROOT" \
        --exec-root "$SOCKETS/docker-exec" --pidfile "$SOCKETS/dockerd.pid" \
        --iptables=false --ip-forward=false --bridge=none
}

stop() {
    # What the tests and the container backend made carries cleanroom's
    # labels; the images they imported or built are named cleanroom*/.
    local engine
    for engine in podman "docker -H unix://$DOCKER_SOCKET"; do
        if [ "$engine" = podman ] && ! command -v podman >/dev/null; then continue; fi
        if [ "$engine" != podman ] && ! running docker; then continue; fi
        for label in cleanroom.owner cleanroom.env; do
            $engine ps -aq --filter "label=$label" | xargs -r $engine rm -f >/dev/null 2>&1 || true
        done
        for reference in 'cleanroom-test/*' 'cleanroom/*' 'cleanroom-build/*'; do
            $engine images -q --filter "reference=$reference" | xargs -r $engine rmi -f >/dev/null 2>&1 || true
        done
    done
    local name
    for name in podman docker; do
        if running "$name"; then
            kill "$(cat "$SOCKETS/$name.pid")"
        fi
    done
    # dockerd ends its containerd as it ends.
    for _ in $(seq 1 100); do
        running docker || break
        sleep 0.1
    done
    rm -f "$SOCKETS/podman.pid" "$SOCKETS/docker.pid" "$PODMAN_SOCKET" "$DOCKER_SOCKET"
    log "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
