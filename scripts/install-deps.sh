#!/usr/bin/env bash
# Installs every package Kiln needs to build and test, from Debian's archive.
# Idempotent and quiet: packages already present are not fetched again.
set -euo pipefail

packages=(
  # LLVM/MLIR 22: headers, the shared libraries, mlir-tblgen, FileCheck, lit.
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools lld-22
  # Build tools.
  cmake ninja-build ccache g++
  # Tests and runtime support (pkg-config: the installed runtime's test).
  libgtest-dev python3 pkg-config
  # libkiln_runtime: the plan schema (flatc, headers) and the cpu GEMM
  # libraries: oneDNN (the default; it picks its kernels from the CPU's
  # features) and OpenBLAS (KILN_GEMM=openblas, and the tests' reference).
  libflatbuffers-dev flatbuffers-compiler libdnnl-dev libopenblas-dev
  # Data-parallel training (mpirun -np N kiln train): Open MPI.
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
