#!/usr/bin/env bash
# Writes a folder (default tmp/cpu-bench) that runs the engine's CPU benches on another machine
# with only glibc, libstdc++ and python3 with torch (for the PyTorch peer): prefill.bench,
# train-threads.bench, train-profile.bench, lora-threads.bench, weights.bench, matmul.bench and
# the model maker,
# each bundled with the engine and tfjs,
# laid out as in the repository (libs/engine/bench/*.js, so that each finds var/models/ and
# docs/ two levels up), tfjs's wasm binaries beside the benches, the PyTorch peer, run.sh and
# this machine's node binary, xz-compressed, that run.sh unpacks when the machine has no node.
# About 38 MB.
#
#   bash tools/bench/cpu/pack.sh [OUT]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/tmp/cpu-bench}")"
cd "$ROOT"
rm -rf "$OUT"
mkdir -p "$OUT/libs/engine/bench" "$OUT/docs"
# esbuild as tsx (a dev dependency) brings it.
node -e "
const esbuild = require(require.resolve('esbuild', { paths: [require.resolve('tsx')] }));
const [out, ...entries] = process.argv.slice(1);
for (const entry of entries) {
  esbuild.buildSync({
    entryPoints: [entry],
    outfile: out + '/libs/engine/bench/' + entry.split('/').pop().replace(/\.ts\$/, '.js'),
    bundle: true, platform: 'node', target: 'node24', format: 'cjs', logLevel: 'error',
    // Backends these benches do not select; selectBackend reports them missing.
    external: ['@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu', 'webgpu'],
  });
}" "$OUT" libs/engine/bench/prefill.bench.ts libs/engine/bench/train-threads.bench.ts libs/engine/bench/train-profile.bench.ts \
  libs/engine/bench/lora-threads.bench.ts libs/engine/bench/weights.bench.ts libs/engine/bench/matmul.bench.ts libs/engine/src/cli/make-model.ts
cp node_modules/@tensorflow/tfjs-backend-wasm/dist/*.wasm "$OUT/libs/engine/bench/"
cp tools/bench/cpu/run.sh tools/bench/gpu/torch_peer.py "$OUT/"
# The benches rewrite their blocks of it; run.sh copies it back out.
cp docs/benchmarks.md "$OUT/docs/"
# node needs only glibc and libstdc++ of the host.
xz -T0 -6 -c "$(readlink -f "$(command -v node)")" >"$OUT/node.xz"
du -sh "$OUT"
