#!/bin/bash
# Reference deployment for als-recsys-eigen.
# Snags:
#  - Makefile: CXX = g++-4.7 and EIGEN = /opt/local/include/eigen3 (MacPorts);
#    Debian has g++ (12) and Eigen 3.4 in /usr/include/eigen3.
#  - #include <Eigen/Array>: an Eigen 2 header that Eigen 3.4 no longer has.
#  - g++ 12 defaults to C++17:
#      * `register` (rng.h) is ill-formed, though g++ 12 only warns,
#      * dynamic exception specifications throw(...) are ill-formed
#        (ratings.h / ratings.cpp),
#      * the global `int rank` is ambiguous with std::rank (C++11) under
#        `using namespace std`.
#    (auto_ptr, bind2nd only warn with libstdc++.)  Compiling with
#    -std=gnu++98 also works (same numbers); here the code is fixed instead.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends g++ make libeigen3-dev

cd /workspace/artifact
sed -i -e 's/^CXX *=.*/CXX      = g++/' \
       -e 's|^EIGEN *=.*|EIGEN    = /usr/include/eigen3|' Makefile
sed -i '/#include <Eigen\/Array>/d' src/als.cpp
sed -i 's/register long /long /' src/rng.h
sed -i -e 's/ throw(std::runtime_error)//' -e 's/ throw()//' src/ratings.h src/ratings.cpp
# rename the identifier `rank` outside string literals
perl -pi -e 's{("(?:[^"\\]|\\.)*")|\brank\b}{defined $1 ? $1 : "n_factors"}ge' src/als.cpp

make clean
make als
sh run_table1.sh
