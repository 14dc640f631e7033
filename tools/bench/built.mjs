/**
 * Runs a bench as the workers run the engine: bundled with the engine and tfjs by esbuild into
 * one CommonJS file, as the apps' build and the packed benches (the pack.sh of tools/bench/gpu
 * and tools/bench/cpu) make them, then run by node. Through tsx, esbuild keeps every function's name (its keepNames),
 * which costs a call each time a function is made: a bench of the host's own time
 * (tools/bench/gpu/host.bench.ts) measured through tsx counts that for every closure a step
 * makes, work the workers never do.
 *
 *   node tools/bench/built.mjs tools/bench/gpu/host.bench.ts [the bench's arguments]
 *   node tools/bench/built.mjs --bundle-only BENCH.ts     # prints the bundle's path, to run under another tool
 *
 * The bundle goes to tmp/bench-built/ with tfjs's wasm binaries and the matmul threads' helper
 * script beside it, where the engine looks for them.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bundleOnly = process.argv[2] === '--bundle-only';
const [entry, ...args] = process.argv.slice(bundleOnly ? 3 : 2);
if (!entry) {
  console.error('usage: node tools/bench/built.mjs [--bundle-only] BENCH.ts [arguments]');
  process.exit(2);
}
const require = createRequire(import.meta.url);
// esbuild as tsx (a dev dependency) brings it.
const esbuild = require(require.resolve('esbuild', { paths: [require.resolve('tsx')] }));
const out = join(root, 'tmp/bench-built');
const name = basename(entry).replace(/\.ts$/, '');
mkdirSync(out, { recursive: true });
esbuild.buildSync({
  entryPoints: { [name]: resolve(entry), 'matmul-threads.worker': join(root, 'libs/engine/src/kernels/matmul-threads.worker.ts') },
  outdir: out,
  bundle: true, platform: 'node', target: 'node24', format: 'cjs', logLevel: 'error',
  // Resolved from node_modules at run time: Dawn's binding loads its binary beside itself; the tfjs-node backends are optional.
  external: ['@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu', 'webgpu'],
});
const wasmDir = dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm', { paths: [root] }));
for (const file of readdirSync(wasmDir).filter((f) => f.endsWith('.wasm'))) copyFileSync(join(wasmDir, file), join(out, file));
if (bundleOnly) {
  console.log(join(out, `${name}.js`));
  process.exit(0);
}
const run = spawnSync(process.execPath, [join(out, `${name}.js`), ...args], { stdio: 'inherit', cwd: process.cwd() });
process.exit(run.status ?? 1);
