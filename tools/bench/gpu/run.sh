#!/usr/bin/env bash
# Runs the GPU benchmark from the folder tools/bench/gpu/pack.sh wrote, on a machine with the
# NVIDIA driver (python3 with torch for the peer). Runs the bundle with the carried Node.js
# (node.xz, unpacked beside this script, as Dawn's dawn.node.xz is beside itself; the bundle targets the project's Node 24, which a
# machine's own node may predate); uses the machine's Vulkan loader, or else the carried
# libvulkan1 .deb unpacked beside this script (dpkg -x). Unless VK_DRIVER_FILES is set, points
# the loader at the NVIDIA driver through its EGL library (an ICD file written here), which
# needs no display; where the driver has no EGL library, at its nvidia_icd.json, which names
# the GLX library: in a headless container that one can fail with "Could not get
# 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0", and the
# run then finds no adapter. Arguments go to gpu-bench.js (--smoke, --no-peer, --backend wasm);
# with `attention` first, the rest go to attention-bench.js (attention.bench.ts) instead.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Whether the dynamic loader finds library $1: in its cache or on LD_LIBRARY_PATH.
has_library() {
  ldconfig -p 2>/dev/null | awk -v lib="$1" '$1 == lib { found = 1 } END { exit !found }' && return 0
  local dir
  for dir in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do [ -e "$dir/$1" ] && return 0; done
  return 1
}
[ -x "$HERE/bin/node" ] || { mkdir -p "$HERE/bin" && xz -dc "$HERE/node.xz" >"$HERE/bin/node" && chmod +x "$HERE/bin/node"; }
export PATH="$HERE/bin:$PATH"
dawn="$HERE/node_modules/webgpu/dist/linux-x64/dawn.node"
[ -e "$dawn" ] || xz -dc "$dawn.xz" >"$dawn"
if ! has_library libvulkan.so.1; then
  [ -d "$HERE/vulkan" ] || dpkg -x "$HERE"/libvulkan1_*.deb "$HERE/vulkan"
  export LD_LIBRARY_PATH="$HERE/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  icd=$(find /usr/share/vulkan /etc/vulkan /usr/local /opt /usr/lib/x86_64-linux-gnu -name nvidia_icd.json 2>/dev/null | head -n 1 || true)
  if has_library libEGL_nvidia.so.0; then
    api=$(sed -n 's/.*"api_version" *: *"\([0-9.]*\)".*/\1/p' "${icd:-/dev/null}" | head -n 1)
    icd="$HERE/nvidia_egl_icd.json"
    printf '{"file_format_version": "1.0.1", "ICD": {"library_path": "libEGL_nvidia.so.0", "api_version": "%s"}}\n' "${api:-1.3.0}" >"$icd"
  fi
  if [ -n "$icd" ]; then export VK_DRIVER_FILES="$icd"; fi
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
# Where the device tool collects files ($OUT), everything printed goes to gpu-bench.log too, so
# that a run cut short by its time limit still brings back what it printed.
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then exec > >(tee -a "$OUT/gpu-bench.log") 2>&1; fi
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-(unset, the loader searches its default paths)}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
if [ "${1:-}" = attention ]; then
  shift
  exec node "$HERE/attention-bench.js" "$@"
fi
exec node "$HERE/gpu-bench.js" --models "${MODELS_DIR:-$HERE/models}" "$@"
