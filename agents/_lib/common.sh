# Shared helpers for agents/<name>/install.sh. Sourced, not run.
#
# The design: an agent is installed once on the host into PREFIX, which is then
# bind-mounted read-only at the same absolute path inside a Debian 12 minbase
# environment. So everything under PREFIX must run from PREFIX alone:
#  - absolute paths only (pip writes absolute shebangs, which is fine because we
#    install at the final path);
#  - no shared library from the host except glibc and libstdc++/libgcc_s (which
#    minbase has, and which an agent cannot downgrade). Every other library
#    (libssl, libffi, libsqlite3, libz, ...) is copied into the prefix and found
#    through a DT_RPATH of '$ORIGIN/...' written with patchelf (DT_RPATH, not
#    DT_RUNPATH: it also serves the dependencies' dependencies, as auditwheel'd
#    wheels such as Pillow rely on, and LD_LIBRARY_PATH cannot override it), NOT through
#    LD_LIBRARY_PATH: LD_LIBRARY_PATH would be inherited by every command the
#    agent runs and make the environment's own programs load our copies.
#    (Even libs minbase happens to have, e.g. libssl3, are bundled: the agent may
#    remove or replace them with apt while it works.)

set -euo pipefail

log() { printf '[install %s] %s\n' "${AGENT_NAME:-agent}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "$1 is required on the host${2:+ ($2)}"; }

# Libraries that the environment itself provides (glibc, the C++ runtime).
# Anything else an ELF file of the prefix needs is bundled.
SYSTEM_LIBS_RE='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libutil\.so\.1|libresolv\.so\.2|libanl\.so\.1|libmvec\.so\.1|libnss_[a-z]+\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'

# Take PREFIX's lock and decide whether there is anything to do.
# Usage: begin_install PREFIX STAMP_CONTENT ; returns 1 (caller exits 0) when
# PREFIX already holds a finished install of exactly this recipe.
begin_install() {
    local prefix=$1 stamp=$2
    case "$prefix" in /*) ;; *) die "PREFIX must be an absolute path, got '$prefix'";; esac
    mkdir -p "$(dirname "$prefix")"
    exec 9>"$prefix.lock"
    flock 9
    if [ -f "$prefix/.cleanroom-installed" ] && [ "$(cat "$prefix/.cleanroom-installed")" = "$stamp" ]; then
        log "already installed in $prefix"
        return 1
    fi
    # A partial or different install: start over (paths are baked in, so we
    # build in place rather than in a temporary directory).
    rm -rf "$prefix"
    mkdir -p "$prefix"
    INSTALL_STARTED=$(date +%s)
    return 0
}

finish_install() {
    local prefix=$1 stamp=$2
    # Read-only for everyone but root; the mount is read-only anyway.
    chmod -R go-w "$prefix"
    du -sb "$prefix" | awk '{print $1}' >"$prefix/.cleanroom-size-bytes"
    echo "$stamp" >"$prefix/.cleanroom-installed"
    log "done in $(( $(date +%s) - INSTALL_STARTED )) s, $(du -sh "$prefix" | cut -f1) in $prefix"
}

is_elf() { [ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# Relative path from directory $1 to directory $2 (both absolute).
relpath() { realpath -m --relative-to="$1" "$2"; }

# Copy every non-system shared library that the ELF files under ROOT load from
# outside ROOT into LIBDIR, and give each such ELF file an RPATH entry
# '$ORIGIN/<relative path to LIBDIR>'. Repeats until nothing new is copied, so
# the copied libraries' own dependencies are handled too.
bundle_shared_libs() {
    local root=$1 libdir=$2 changed=1 f dep path name rel old new
    need patchelf "apt-get install patchelf"
    mkdir -p "$libdir"
    while [ "$changed" = 1 ]; do
        changed=0
        while IFS= read -r -d '' f; do
            is_elf "$f" || continue
            # Only dynamically linked objects.
            readelf -d "$f" 2>/dev/null | grep -q '(NEEDED)' || continue
            local missing=()
            while read -r name path; do
                [[ "$name" =~ $SYSTEM_LIBS_RE ]] && continue
                case "$path" in
                    "$root"/*) continue ;;          # already inside the prefix
                    /*) ;;
                    *)  # Unresolved by ldd on its own: auditwheel'd libs (foo.libs/)
                        # find their siblings through the loading module's RUNPATH.
                        [ -e "$(dirname "$f")/$name" ] && continue
                        log "warning: $f needs $name, found neither here nor on the host"
                        continue ;;
                esac
                if [ ! -e "$libdir/$name" ]; then
                    cp -L "$path" "$libdir/$name"
                    chmod u+w "$libdir/$name"
                    patchelf --force-rpath --set-rpath '$ORIGIN' "$libdir/$name"
                    log "bundled $name (from $path)"
                    changed=1
                fi
                missing+=("$name")
            done < <(ldd "$f" 2>/dev/null | awk '$2 == "=>" {print $1, $3}')
            if [ "${#missing[@]}" -gt 0 ]; then
                rel='$ORIGIN/'$(relpath "$(dirname "$f")" "$libdir")
                old=$(patchelf --print-rpath "$f")
                case ":$old:" in *":$rel:"*) ;; *)
                    # Drop host paths (e.g. /root/.pyenv/...), keep $ORIGIN ones.
                    new=$rel
                    local IFS_save=$IFS; IFS=:
                    for p in $old; do case "$p" in '$ORIGIN'*) new="$new:$p";; esac; done
                    IFS=$IFS_save
                    chmod u+w "$f"
                    patchelf --force-rpath --set-rpath "$new" "$f"
                    changed=1
                    ;;
                esac
            fi
        done < <(find "$root" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0)
    done
}

# Build a relocatable CPython in DEST from an existing (pyenv-style,
# --enable-shared) install SRC: interpreter, libpython and the standard library
# without tests, tkinter, idle and site-packages; RUNPATHs rewritten to
# $ORIGIN-relative RPATHs; every non-glibc library bundled in DEST/lib; pip from
# the bundled ensurepip wheel. Prints nothing on success.
make_python_runtime() {
    local src=$1 dest=$2 ver
    [ -x "$src/bin/python3" ] || die "no Python at $src (set CLEANROOM_PYTHON_SRC)"
    ver=$("$src/bin/python3" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    [ -e "$src/lib/libpython$ver.so.1.0" ] || die "$src is not a --enable-shared build"
    mkdir -p "$dest/bin" "$dest/lib"
    cp -a "$src/bin/python$ver" "$dest/bin/"
    ln -sf "python$ver" "$dest/bin/python3"
    cp -a "$src/lib/libpython$ver.so.1.0" "$dest/lib/"
    (cd "$src/lib" && tar -cf - \
        --exclude="python$ver/site-packages" --exclude="python$ver/test" \
        --exclude="python$ver/idlelib" --exclude="python$ver/tkinter" \
        --exclude="python$ver/turtledemo" --exclude="python$ver/lib2to3/tests" \
        --exclude="python$ver/config-$ver-x86_64-linux-gnu/*.a" \
        --exclude='_tkinter.*' --exclude='_test*.so' --exclude='_ctypes_test*.so' \
        --exclude='xxlimited*.so' --exclude='_xxtestfuzz*.so' \
        "python$ver") | tar -xf - -C "$dest/lib"
    mkdir -p "$dest/lib/python$ver/site-packages"
    chmod u+w "$dest/bin/python$ver" "$dest/lib/libpython$ver.so.1.0"
    patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$dest/bin/python$ver"
    patchelf --force-rpath --set-rpath '$ORIGIN' "$dest/lib/libpython$ver.so.1.0"
    # lib-dynload modules carry RUNPATH=<src>/lib: point them at dest/lib.
    local so
    for so in "$dest/lib/python$ver/lib-dynload/"*.so; do
        chmod u+w "$so"
        patchelf --force-rpath --set-rpath '$ORIGIN/../..' "$so"
    done
    bundle_shared_libs "$dest" "$dest/lib"
    # Self-check: the copy must not fall back to the source tree.
    "$dest/bin/python3" - "$src" "$dest" <<'EOF'
import sys, ssl, sqlite3, ctypes, lzma, bz2, zlib, hashlib, decimal, uuid, readline, json
src, dest = sys.argv[1], sys.argv[2]
assert sys.prefix == dest, (sys.prefix, dest)
for p in sys.path:
    assert not p.startswith(src + "/"), p
EOF
    "$dest/bin/python3" -m ensurepip --default-pip >/dev/null
}

# pip install into the prefix's own Python. Host pip settings (index mirror,
# certificate) are honoured; the user site and the cache are not used.
prefix_pip() {
    local py=$1; shift
    PYTHONNOUSERSITE=1 "$py" -m pip install --no-cache-dir --no-warn-script-location \
        --disable-pip-version-check "$@"
}

# Write a plain launcher script: exec ABSOLUTE_TARGET "$@" with no environment
# changes (run.sh decides the environment).
write_launcher() {
    local path=$1; shift
    mkdir -p "$(dirname "$path")"
    {
        echo '#!/bin/sh'
        printf 'exec'
        printf ' %q' "$@"
        echo ' "$@"'
    } >"$path"
    chmod 755 "$path"
}
