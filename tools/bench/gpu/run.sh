#!/usr/bin/env bash
# Runs the GPU benchmark from the folder tools/bench/gpu/pack.sh wrote, on a machine with the
# NVIDIA driver (python3 with torch for the peer), with the carried Node.js, Dawn and Vulkan
# loader (gpu-env.sh). Arguments go to gpu-bench.js (--smoke, --no-peer, --backend wasm); with
# `attention` or `products` first, the rest go to attention-bench.js (attention.bench.ts) or
# products-bench.js (products.bench.ts) instead.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=gpu-env.sh
source "$HERE/gpu-env.sh"
# Where the device tool collects files ($OUT), everything printed goes to gpu-bench.log too, so
# that a run cut short by its time limit still brings back what it printed.
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then exec > >(tee -a "$OUT/gpu-bench.log") 2>&1; fi
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-(unset, the loader searches its default paths)}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
if [ "${1:-}" = attention ] || [ "${1:-}" = products ]; then
  bench="$1"
  shift
  exec node "$HERE/$bench-bench.js" "$@"
fi
exec node "$HERE/gpu-bench.js" --models "${MODELS_DIR:-$HERE/models}" "$@"
