#!/usr/bin/env bash
# Writes a folder (default tmp/gpu-bench) that runs tools/bench/gpu/gpu.bench.ts on a GPU
# machine with nothing but node: the script bundled with the engine and tfjs, Dawn's
# dawn.node where the bundle looks for it, tfjs's wasm binaries (for --backend wasm), the
# PyTorch peer, run.sh, and the libvulkan1 .deb that run.sh unpacks when the machine has no
# Vulkan loader. About 30 MB.
#
#   bash tools/bench/gpu/pack.sh [OUT]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/tmp/gpu-bench}")"
cd "$ROOT"
rm -rf "$OUT"
mkdir -p "$OUT/node_modules/webgpu/dist/linux-x64"
# esbuild as tsx (a dev dependency) brings it.
node -e "
const esbuild = require(require.resolve('esbuild', { paths: [require.resolve('tsx')] }));
esbuild.buildSync({
  entryPoints: ['tools/bench/gpu/gpu.bench.ts'],
  outfile: process.argv[1],
  bundle: true, platform: 'node', target: 'node20', format: 'cjs', logLevel: 'error',
  // Optional, absent here; selectBackend reports it missing.
  external: ['@tensorflow/tfjs-node-gpu'],
});" "$OUT/gpu-bench.js"
cp node_modules/webgpu/package.json node_modules/webgpu/LICENSE.md "$OUT/node_modules/webgpu/"
cp node_modules/webgpu/dist/linux-x64/dawn.node "$OUT/node_modules/webgpu/dist/linux-x64/"
cp node_modules/@tensorflow/tfjs-backend-wasm/dist/*.wasm "$OUT/"
cp tools/bench/gpu/run.sh tools/bench/gpu/torch_peer.py "$OUT/"
(cd "$OUT" && apt-get download libvulkan1 >/dev/null)
du -sh "$OUT"
