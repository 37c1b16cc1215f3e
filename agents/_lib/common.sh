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
# '$ORIGIN/<relative path to LIBDIR>'. RPATH and RUNPATH entries that are not
# $ORIGIN-relative (host paths such as /root/.pyenv/...) are dropped. Repeats
# until nothing changes, so the copied libraries' own dependencies are
# handled too.
bundle_shared_libs() {
    local root=$1 libdir=$2 changed=1 f path name old new p
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
            old=$(patchelf --print-rpath "$f")
            new=
            [ "${#missing[@]}" -gt 0 ] && new='$ORIGIN/'$(relpath "$(dirname "$f")" "$libdir")
            local IFS_save=$IFS; IFS=:
            for p in $old; do
                case "$p" in '$ORIGIN'*) [ "$p" = "$new" ] || new=${new:+$new:}$p;; esac
            done
            IFS=$IFS_save
            if [ "$new" != "$old" ]; then
                chmod u+w "$f"
                if [ -n "$new" ]; then
                    patchelf --force-rpath --set-rpath "$new" "$f"
                else
                    patchelf --remove-rpath "$f"
                fi
                changed=1
            fi
        done < <(find "$root" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0)
    done
}

# What an agent's Python must have: pip needs ssl, the agents and their
# libraries the rest; ensurepip and venv make the runtime (Debian and Ubuntu
# ship those two apart, in python3.X-venv).
PYTHON_MODULES=(ssl sqlite3 ctypes lzma bz2 zlib hashlib decimal uuid json ensurepip venv)

# Run by a candidate interpreter with MINOR... MODULE... as arguments: prints
# why it does not fit, nothing when it does.
PYTHON_FIT_CHECK='
import sys, importlib.util
version = "%d.%d" % sys.version_info[:2]
minors = [a for a in sys.argv[1:] if a[0].isdigit()]
modules = [a for a in sys.argv[1:] if not a[0].isdigit()]
if sys.implementation.name != "cpython":
    print("is not CPython")
elif version not in minors:
    print("is " + version)
else:
    lacks = [m for m in modules if importlib.util.find_spec(m) is None]
    if lacks:
        debian_venv = sys.prefix == "/usr" and {"ensurepip", "venv"} & set(lacks)
        hint = " (apt-get install python%s-venv)" % version if debian_venv else ""
        print("lacks " + ", ".join(lacks) + hint)
'

# Prints the CPython interpreter to build an agent's runtime from, of one of
# the minor versions given (the first preferred). Looked for in this order:
#  1. CLEANROOM_PYTHON_SRC: interpreters or install prefixes, ':'-separated;
#  2. the distribution's /usr/bin/python3.X;
#  3. pyenv's builds, ${PYENV_ROOT:-~/.pyenv}/versions/3.X.*, newest first;
#  4. /usr/local/bin/python3.X.
# One of another version, or without PYTHON_MODULES, is passed over; when
# none fits, the error names each one passed over and why.
# Usage: py=$(find_python 3.12 [3.13 ...])
find_python() {
    local pyenv=${PYENV_ROOT:-${HOME:-/root}/.pyenv} entry minor py why
    local candidates=() passed=()
    local IFS_save=$IFS; IFS=:
    for entry in ${CLEANROOM_PYTHON_SRC:-}; do
        [ -d "$entry" ] && entry=$entry/bin/python3
        [ -f "$entry" ] && [ -x "$entry" ] \
            || die "CLEANROOM_PYTHON_SRC: $entry is neither a Python interpreter nor an install prefix"
        candidates+=("$entry")
    done
    IFS=$IFS_save
    for minor; do candidates+=("/usr/bin/python$minor"); done
    for minor; do
        while IFS= read -r entry; do
            candidates+=("$entry/bin/python$minor")
        done < <(find "$pyenv/versions" -mindepth 1 -maxdepth 1 -name "$minor.[0-9]*" 2>/dev/null | sort -rV)
    done
    for minor; do candidates+=("/usr/local/bin/python$minor"); done
    for py in "${candidates[@]}"; do
        [ -x "$py" ] || continue
        why=$(env -i "$py" -I -c "$PYTHON_FIT_CHECK" "$@" "${PYTHON_MODULES[@]}" 2>/dev/null) || why="does not run"
        if [ -z "$why" ]; then
            echo "$py"
            return 0
        fi
        passed+=("$py $why")
    done
    local msg wanted="$*"
    msg="$AGENT_NAME needs CPython ${wanted// / or }: none found (looked in CLEANROOM_PYTHON_SRC, /usr/bin, $pyenv/versions, /usr/local/bin"
    [ "${#passed[@]}" -gt 0 ] && msg+="; passed over: $(printf '%s; ' "${passed[@]}")" && msg=${msg%; }
    die "$msg); install one (the distribution's, pyenv's, or one built into /usr/local) or set CLEANROOM_PYTHON_SRC"
}

# Build a relocatable CPython runtime in DEST from the interpreter PY, whatever
# its layout (pyenv's or another self-built one, with libpython shared or not;
# a distribution's, with the standard library in /usr/lib/python3.X):
#  - DEST/cpython: the interpreter and the standard library without tests,
#    tkinter, idle, site-packages and links out of it; every non-glibc
#    library (libpython too, when shared) bundled in DEST/cpython/lib and
#    found through $ORIGIN-relative RPATHs;
#  - DEST: a venv on DEST/cpython, with pip, where the agent is installed.
#    Inside a venv, pip, site and sysconfig behave as upstream's whatever the
#    source, where a distribution's own interpreter would install into
#    local/.../dist-packages, or refuse (EXTERNALLY-MANAGED).
# The venv refers to DEST/cpython by absolute path, which holds because the
# prefix is mounted at the same path inside environments.
make_python_runtime() {
    local py=$1 dest=$2 base=$2/cpython ver exe stdlib dynload platlib l
    { read -r ver; read -r exe; read -r stdlib; read -r dynload; read -r platlib; } < <(env -i "$py" -I -c '
import os, sys
print("%d.%d" % sys.version_info[:2])
print(os.path.realpath(sys.executable))
print(os.path.dirname(os.__file__))
print(next(p for p in sys.path if p.endswith("/lib-dynload")))
print(sys.platlibdir)')
    [ "$(basename "$stdlib")" = "python$ver" ] || die "$py: unexpected standard library directory $stdlib"
    log "runtime from $py (CPython $ver, standard library in $stdlib)"
    mkdir -p "$base/bin" "$base/$platlib"
    cp -L "$exe" "$base/bin/python$ver"
    ln -s "python$ver" "$base/bin/python3"
    (cd "$(dirname "$stdlib")" && tar -cf - \
        --exclude="python$ver/site-packages" --exclude="python$ver/dist-packages" \
        --exclude="python$ver/test" --exclude="python$ver/idlelib" \
        --exclude="python$ver/tkinter" --exclude="python$ver/turtledemo" \
        --exclude="python$ver/lib2to3/tests" --exclude="python$ver/config-$ver-*/*.a" \
        --exclude="python$ver/EXTERNALLY-MANAGED" \
        --exclude='_tkinter.*' --exclude='_test*.so' --exclude='_ctypes_test*.so' \
        --exclude='xxlimited*.so' --exclude='_xxtestfuzz*.so' \
        "python$ver") | tar -xf - -C "$base/$platlib"
    # Some systems keep the extension modules apart (lib64/...).
    [ -d "$base/$platlib/python$ver/lib-dynload" ] || cp -a "$dynload" "$base/$platlib/python$ver/lib-dynload"
    # Links out of the copy (Debian's sitecustomize.py -> /etc/python3.X/,
    # libpython.so in config-3.X-*/) would reach the host's files, or whatever
    # the agent puts at that path inside the environment.
    while IFS= read -r -d '' l; do
        case "$(realpath -m "$l")" in
            "$base"/*) ;;
            *) log "dropped ${l#"$base"/} -> $(readlink "$l")"; rm "$l" ;;
        esac
    done < <(find "$base" -type l -print0)
    bundle_shared_libs "$base" "$base/lib"
    # Self-checks, with a cleared environment: the copy must not fall back to
    # the source, and the venv must sit on the copy.
    env -i "$base/bin/python3" -I -c '
import importlib, sys
base, modules = sys.argv[1], sys.argv[2:]
for m in modules:
    importlib.import_module(m)
assert sys.prefix == base, (sys.prefix, base)
for p in sys.path:
    assert p.startswith(base + "/"), p' "$base" "${PYTHON_MODULES[@]}" || die "the copy of $py in $base is not self-contained"
    env -i "$base/bin/python$ver" -I -m venv "$dest" || die "making a venv in $dest failed"
    env -i "$dest/bin/python3" -I -c '
import sys, pip
dest, base = sys.argv[1:]
assert (sys.prefix, sys.base_prefix) == (dest, base), (sys.prefix, sys.base_prefix)
for p in sys.path:
    assert p.startswith(dest + "/"), p' "$dest" "$base" || die "the venv in $dest is not self-contained"
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
