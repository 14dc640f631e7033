#!/usr/bin/env bash
# Writes a folder (default tmp/gpu-bench) that runs tools/bench/gpu/gpu.bench.ts (and
# attention.bench.ts: run.sh attention; products.bench.ts: run.sh products) on a GPU machine with only the NVIDIA driver (and python3 with torch for the peer): the script
# bundled with the engine and tfjs, Dawn's dawn.node (xz-compressed) where the bundle looks for it, tfjs's wasm
# binaries (for --backend wasm), the PyTorch peer, run.sh and draw.sh, the libvulkan1 .deb that
# run.sh unpacks when the machine has no Vulkan loader, and the project's Node.js (ensure_node:
# this machine's when it is new enough) that run.sh runs the bundle with; all but the scripts
# xz-compressed. About 37 MB.
#
#   bash tools/bench/gpu/pack.sh [OUT]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/tmp/gpu-bench}")"
cd "$ROOT"
# shellcheck source=../../../scripts/lib/common.sh
source scripts/lib/common.sh
ensure_node
rm -rf "$OUT"
mkdir -p "$OUT/node_modules/webgpu/dist/linux-x64"
node scripts/build-kernels.mjs >/dev/null
# esbuild as tsx (a dev dependency) brings it. The matmul threads' helper script goes beside
# the bundle, where the engine looks for it.
node -e "
const esbuild = require(require.resolve('esbuild', { paths: [require.resolve('tsx')] }));
esbuild.buildSync({
  entryPoints: { 'gpu-bench': 'tools/bench/gpu/gpu.bench.ts', 'attention-bench': 'tools/bench/gpu/attention.bench.ts', 'products-bench': 'tools/bench/gpu/products.bench.ts', 'matmul-threads.worker': 'libs/engine/src/kernels/matmul-threads.worker.ts' },
  outdir: process.argv[1],
  bundle: true, platform: 'node', target: 'node24', format: 'cjs', logLevel: 'error',
  // Optional, absent here; selectBackend reports it missing.
  external: ['@tensorflow/tfjs-node-gpu'],
});" "$OUT"
cp node_modules/webgpu/package.json node_modules/webgpu/LICENSE.md "$OUT/node_modules/webgpu/"
# Compressed, as node is: the folder travels with the repository under the device tool's 64 MiB,
# and Dawn's 21 MB take 5 in xz. run.sh unpacks it where the bundle looks for it.
xz -T0 -6 -c node_modules/webgpu/dist/linux-x64/dawn.node >"$OUT/node_modules/webgpu/dist/linux-x64/dawn.node.xz"
cp node_modules/@tensorflow/tfjs-backend-wasm/dist/*.wasm "$OUT/"
# The bundles (each with the engine and tfjs) and the wasm binaries xz-compressed too, a fifth
# of their size, so that this folder and the stack's (pack-stack.sh) travel together under the
# device tool's 64 MiB; gpu-env.sh unpacks them beside themselves.
xz -T0 -6 "$OUT"/*.js "$OUT"/*.wasm
cp tools/bench/gpu/run.sh tools/bench/gpu/draw.sh tools/bench/gpu/gpu-env.sh tools/bench/gpu/torch_peer.py "$OUT/"
(cd "$OUT" && apt-get download libvulkan1 >/dev/null)
# node needs only glibc and libstdc++ of the host.
xz -T0 -6 -c "$(readlink -f "$(command -v node)")" >"$OUT/node.xz"
du -sh "$OUT"
