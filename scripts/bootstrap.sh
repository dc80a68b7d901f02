#!/usr/bin/env bash
# Installs what memra needs on a fresh Debian 12 machine (run as root, or with sudo available).
# Idempotent: packages already present are not reinstalled. The CUDA toolkit (with cuBLASLt) is
# not a Debian package here: it must already be under /usr/local/cuda (or set MEMRA_CUDA=OFF in
# the build: cmake --preset cpu-only).
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache pkg-config git
      libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      zlib1g-dev python3 python3-jinja2 unicode-data unzip)
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
# CUPTI (pp-bench --trace: per-kernel device timestamps) is not in this toolkit install: its
# headers and libcupti.so.13 come from NVIDIA's PyPI wheel, pinned to the toolkit's 13.0 line,
# into /opt/memra-deps/cupti. Optional: without it the build still succeeds and --trace says why.
cupti=/opt/memra-deps/cupti
# The same wheel's libnvperf_host.so / libnvperf_target.so serve pp-bench --pm-sample (CUPTI's PM
# sampling loads them); a "trace" device pack carries them.
if { [ ! -f "$cupti/include/cupti_activity.h" ] && [ ! -f "$cuda/extras/CUPTI/include/cupti_activity.h" ]; } ||
   [ ! -f "$cupti/lib/libnvperf_host.so" ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download --no-deps -q -d "$tmp" "nvidia-cuda-cupti==13.0.85" >/dev/null 2>&1 &&
     (cd "$tmp" && unzip -q ./*.whl 'nvidia/cu13/include/*' 'nvidia/cu13/lib/libcupti.so.13' \
        'nvidia/cu13/lib/libnvperf_host.so' 'nvidia/cu13/lib/libnvperf_target.so'); then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO mkdir -p "$cupti/lib"
    $SUDO cp -r "$tmp/nvidia/cu13/include" "$cupti/"
    $SUDO cp "$tmp/nvidia/cu13/lib/libcupti.so.13" "$tmp/nvidia/cu13/lib/libnvperf_host.so" \
      "$tmp/nvidia/cu13/lib/libnvperf_target.so" "$cupti/lib/"
    echo "bootstrap: CUPTI 13.0 headers, libcupti and libnvperf under $cupti"
  else
    echo "bootstrap: warning: could not fetch CUPTI (pip nvidia-cuda-cupti==13.0.85); pp-bench --trace will be unavailable" >&2
  fi
  rm -rf "$tmp"
fi
# cuobjdump and nvdisasm (scripts/check-pdl-loads.py reads the kernels' SASS: no load of an earlier
# kernel's output may run before a PDL dependency wait) are not in this toolkit install either:
# NVIDIA's PyPI wheels, into /opt/memra-deps/sass-tools. Optional: without them the check says so.
sass_tools=/opt/memra-deps/sass-tools
if [ ! -x "$sass_tools/nvdisasm" ] || [ ! -x "$sass_tools/cuobjdump" ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download --no-deps -q -d "$tmp" "nvidia-cuda-cuobjdump==13.5.37" "nvidia-cuda-nvdisasm==13.5.37" >/dev/null 2>&1 &&
     (cd "$tmp" && for w in ./*.whl; do unzip -q -o "$w" 'nvidia/cu13/bin/*'; done); then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO mkdir -p "$sass_tools"
    $SUDO cp "$tmp/nvidia/cu13/bin/cuobjdump" "$tmp/nvidia/cu13/bin/nvdisasm" "$sass_tools/"
    $SUDO chmod +x "$sass_tools/cuobjdump" "$sass_tools/nvdisasm"
    echo "bootstrap: cuobjdump and nvdisasm 13.5 under $sass_tools"
  else
    echo "bootstrap: warning: could not fetch cuobjdump / nvdisasm (pip nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm); scripts/check-pdl-loads.py will be unavailable" >&2
  fi
  rm -rf "$tmp"
fi
echo "bootstrap: ok ($("$cuda/bin/nvcc" --version | tail -n 2 | head -n 1))"
