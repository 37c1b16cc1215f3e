#!/bin/bash
# Reference deployment for arj-methods.
# The artifact is Debian's arj 3.10.22-26 source with the patches NOT applied.
# Snags: (1) upstream ARJ is not 64-bit clean: on x86_64 the generated message
# tables do not even compile (fmsg_arj.c) -- Debian's patch series fixes this
# and more; (2) the 2004 gnu/config.guess and config.sub do not know
# x86_64-pc-linux-gnu, so configure stops; (3) once patched, the build dates
# the help archive from SOURCE_DATE_EPOCH and fails ("Invalid date string")
# when it is unset.  The fixes must live in the tree or the login shell, since
# the verifier rebuilds with study/build_arj.sh, which must stay as it is.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends gcc libc6-dev make autoconf automake patch

cd /workspace/artifact
# (1) Debian's patches, in series order (what `quilt push -a` would do)
while read -r p; do
    case "$p" in ''|\#*) continue ;; esac
    patch -p1 --forward < "debian/patches/$p"
done < debian/patches/series
# (2) current config.guess/config.sub (from autotools-dev)
cp /usr/share/misc/config.guess /usr/share/misc/config.sub gnu/
# (3) a fixed SOURCE_DATE_EPOCH in the login environment
echo 'export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1104537600}' > /etc/profile.d/arj-build.sh
. /etc/profile.d/arj-build.sh

sh study/build_arj.sh
sh study/run_table1.sh
