#!/usr/bin/env bash
# Runs the GPU benchmark from the folder tools/bench/gpu/pack.sh wrote, on a machine with the
# NVIDIA driver and node 20 (python3 with torch for the peer). Uses the machine's Vulkan
# loader, or else the carried libvulkan1 .deb unpacked beside this script (dpkg -x); points
# the loader at the NVIDIA driver's nvidia_icd.json unless VK_DRIVER_FILES is set. Arguments
# go to gpu-bench.js (--smoke, --no-peer, --backend wasm).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  [ -d "$HERE/vulkan" ] || dpkg -x "$HERE"/libvulkan1_*.deb "$HERE/vulkan"
  export LD_LIBRARY_PATH="$HERE/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  icd=$(find /usr/share/vulkan /etc/vulkan /usr/local /opt /usr/lib/x86_64-linux-gnu -name nvidia_icd.json 2>/dev/null | head -n 1 || true)
  if [ -n "$icd" ]; then export VK_DRIVER_FILES="$icd"; fi
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-(unset, the loader searches its default paths)}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
exec node "$HERE/gpu-bench.js" --models "${MODELS_DIR:-$HERE/models}" "$@"
