#!/usr/bin/env bash
# Installs what memra needs on a fresh Debian 12 machine (run as root, or with sudo available).
# Idempotent: packages already present are not reinstalled. The CUDA toolkit (with cuBLASLt) is
# not a Debian package here: it must already be under /usr/local/cuda (or set MEMRA_CUDA=OFF in
# the build: cmake --preset cpu-only).
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache pkg-config git
      libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      python3 python3-jinja2 unicode-data unzip)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cuda=/usr/local/cuda
problems=()
[ -x "$cuda/bin/nvcc" ] || problems+=("nvcc ($cuda/bin/nvcc)")
ls "$cuda"/lib64/libcublasLt.so* >/dev/null 2>&1 || ls "$cuda"/targets/x86_64-linux/lib/libcublasLt.so* >/dev/null 2>&1 || problems+=("cuBLASLt ($cuda/lib64/libcublasLt.so)")
ls "$cuda"/lib64/libcudart_static.a >/dev/null 2>&1 || ls "$cuda"/targets/x86_64-linux/lib/libcudart_static.a >/dev/null 2>&1 || problems+=("static CUDA runtime ($cuda/lib64/libcudart_static.a)")
if ((${#problems[@]})); then
  echo "bootstrap: the CUDA toolkit is incomplete; missing: ${problems[*]}" >&2
  echo "bootstrap: install CUDA 13 under $cuda, or build CPU-only with: cmake --preset cpu-only" >&2
  exit 1
fi
echo "bootstrap: ok ($("$cuda/bin/nvcc" --version | tail -n 2 | head -n 1))"
