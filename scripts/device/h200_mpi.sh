#!/usr/bin/env bash
# Two MPI ranks on the two-GPU H200 machine: `anygrad bench resnet18-train --distributed`
# with an anygrad built with `--features mpi` ($MPIBIN). The machine has no OpenMPI, so the
# Debian packages carried in .mpi/ are unpacked into a private prefix (never over the
# system) and found through OPAL_PREFIX, PATH and LD_LIBRARY_PATH.
# Usage (repo root): MPIBIN=.devbin/s5mpi/anygrad OUT=/tmp/out scripts/device/h200_mpi.sh
set -u
MPIBIN=${MPIBIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
PREFIX=/opt/anygrad-mpi
mkdir -p "$OUT" "$PREFIX"
for deb in .mpi/*.deb; do dpkg -x "$deb" "$PREFIX"; done
export OPAL_PREFIX=$PREFIX/usr
export PATH=$PREFIX/usr/bin:$PATH
export LD_LIBRARY_PATH=$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Shared memory and loopback only: no fabric probing on a machine without one.
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2 OMPI_MCA_btl_vader_single_copy_mechanism=none
ldd "$MPIBIN" | grep -i mpi | tee -a "$OUT/mpi-log.txt"
mpirun --version 2>&1 | head -2 | tee -a "$OUT/mpi-log.txt"
timeout 300 mpirun -n 2 --bind-to none "$MPIBIN" bench resnet18-train --distributed --json \
    2>>"$OUT/mpi-log.txt" | tee -a "$OUT/anygrad-mpi.jsonl"
tail -20 "$OUT/mpi-log.txt"
