#!/bin/sh
# How we built ARJ for the study (Debian 3.1 "sarge", gcc 3.3, i386),
# following doc/compile.txt.
set -e
cd "$(dirname "$0")/.."
cd gnu
autoheader
autoconf
./configure
cd ..
make
ls -l linux-gnu/en/rs/arj/arj
