/**
 * Generation speed on a SmolLM2-135M-shaped model (random weights, f32):
 *
 *   npx tsx libs/engine/bench/generate.bench.ts
 *   WEIGHTS=bf16 npx tsx libs/engine/bench/generate.bench.ts   (weights stored in bf16; prints only)
 *
 * Makes the model under var/models/ if missing, measures prefill, decode at batch 1 and
 * aggregate decode at batch 8, and peak RSS, and rewrites docs/benchmarks.md with the
 * figures next to their targets. ENGINE_BACKEND=wasm|cpu|tensorflow|auto picks the backend.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BackendPreference, selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { loadModel } from '../src/loader';
import { createRng, sampleToken } from '../src/sampling';

const ROOT = path.resolve(__dirname, '../../..');
/** WEIGHTS=bf16 stores the model in bf16, as SmolLM2 ships (the kernel then reads bf16 panels); default f32. */
const BF16 = process.env['WEIGHTS'] === 'bf16';
const MODEL_DIR = path.join(ROOT, BF16 ? 'var/models/bench-smollm2-135m-bf16' : 'var/models/bench-smollm2-135m');
const DOC = path.join(ROOT, 'docs/benchmarks.md');
const PREFILL_TOKENS = 128;
const DECODE_TOKENS = 48;
const BATCH = 8;

async function main(): Promise<void> {
  const backend = await selectBackend((process.env['ENGINE_BACKEND'] as BackendPreference | undefined) ?? 'wasm');
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) {
    // In a process of its own: the maker's buffers would otherwise count in this one's peak RSS.
    console.log(`making ${MODEL_DIR}`);
    const cli = path.join(ROOT, 'libs/engine/src/cli/make-model.ts');
    execFileSync(process.execPath, [...process.execArgv, cli, '--preset', 'smollm2-135m', '--out', MODEL_DIR, '--seed', '0', '--dtype', BF16 ? 'BF16' : 'F32'], { stdio: 'inherit' });
  }
  const loadStart = performance.now();
  // As an inference worker loads it: the weights held once, packed for the kernel.
  const lm = await loadModel(MODEL_DIR, { inferenceOnly: true });
  const loadMs = performance.now() - loadStart;
  console.log(`backend ${backend.name}, loaded in ${(loadMs / 1000).toFixed(1)} s`);
  const rng = createRng(0);
  const V = lm.config.vocabSize;
  const randomPrompt = (n: number) => Array.from({ length: n }, () => 3 + Math.floor(rng.next() * (V - 3)));
  const greedy = (logits: Float32Array) => sampleToken(logits, { temperature: 0 }, rng).id;

  // Warm up: XNNPACK packs each weight on first use.
  {
    const warm = new DecodeBatch<number>(lm.model);
    const first = greedy(await warm.join(0, randomPrompt(16)));
    await warm.step(new Map([[0, first]]));
    warm.dispose();
  }

  // Prefill: one prompt of PREFILL_TOKENS, twice.
  let prefillMs = Infinity;
  for (let run = 0; run < 2; run++) {
    const batch = new DecodeBatch<number>(lm.model);
    const t0 = performance.now();
    await batch.join(0, randomPrompt(PREFILL_TOKENS));
    prefillMs = Math.min(prefillMs, performance.now() - t0);
    batch.dispose();
  }
  const prefillTps = PREFILL_TOKENS / (prefillMs / 1000);

  // Decode at batch 1 and batch 8 (prompts of different lengths), sampling included.
  const decode = async (size: number): Promise<number> => {
    const batch = new DecodeBatch<number>(lm.model);
    const next = new Map<number, number>();
    for (let i = 0; i < size; i++) next.set(i, greedy(await batch.join(i, randomPrompt(24 + 8 * i))));
    const t0 = performance.now();
    for (let step = 0; step < DECODE_TOKENS; step++) {
      const logits = await batch.step(next);
      for (const [i, l] of logits) next.set(i, greedy(l));
    }
    const seconds = (performance.now() - t0) / 1000;
    batch.dispose();
    return (size * DECODE_TOKENS) / seconds;
  };
  const decode1 = await decode(1);
  const decode8 = await decode(BATCH);
  const peakRssMb = process.resourceUsage().maxRSS / 1024;

  const figures = [
    { name: 'decode, batch 1', value: decode1, unit: 'tokens/s', target: '≥ 20', ok: decode1 >= 20 },
    { name: `decode, batch ${BATCH} (aggregate)`, value: decode8, unit: 'tokens/s', target: '≥ 60', ok: decode8 >= 60 },
    { name: `prefill (${PREFILL_TOKENS}-token prompt)`, value: prefillTps, unit: 'tokens/s', target: '≥ 50', ok: prefillTps >= 50 },
    { name: 'peak RSS', value: peakRssMb, unit: 'MB', target: '< 1536', ok: peakRssMb < 1536 },
  ];
  for (const f of figures) console.log(`${f.name}: ${f.value.toFixed(1)} ${f.unit} (target ${f.target}) ${f.ok ? 'ok' : 'MISSED'}`);
  if (BF16) console.log('bf16 weights: docs/benchmarks.md left as it is (its figures are f32)');
  else writeDoc(backend.name, loadMs, figures);
  lm.dispose();
}

function writeDoc(backend: string, loadMs: number, figures: { name: string; value: number; unit: string; target: string; ok: boolean }[]): void {
  const cpu = (fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) ?? [])[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const rows = figures.map((f) => `| ${f.name} | ${f.value.toFixed(1)} ${f.unit} | ${f.target} | ${f.ok ? 'met' : 'missed'} |`).join('\n');
  const doc = `# Engine benchmarks

Measured by \`npx tsx libs/engine/bench/generate.bench.ts\` on ${new Date().toISOString().slice(0, 10)}.
Model: SmolLM2-135M shape (30 layers, hidden 576, 9 heads / 3 KV heads, vocab 49152, tied
embeddings), random weights made by the model maker, float32. Greedy sampling in JS is
included in the decode figures; prefill is one ${PREFILL_TOKENS}-token prompt (best of 2).

## Machine

| | |
|---|---|
| CPU | ${cpu} |
| cores | ${os.cpus().length} |
| Node | ${process.version} |
| backend | ${backend} (single thread, SIMD) |
| load time | ${(loadMs / 1000).toFixed(1)} s |

## Results

| figure | measured | target | |
|---|---|---|---|
${rows}

The machine is shared with other build and test jobs: figures move a lot between runs
(see the optimisation log at the end when present), so compare runs made close together.

Where a batch-8 decode step goes (CPU profile of 80 decode steps, prompts of 24-80 tokens,
about 150 ms per step, 2026-11-23): XNNPACK's GEMM for the weight matMuls about 70 %, the
decode attention kernel 5 %, greedy sampling in JS 5 % (log-sum-exp over the vocabulary for the
sampled token's logprob), the KV-cache concat (a JS copy loop in tfjs-wasm) 3 %, garbage
collection 6 %, the rest tfjs dispatch. Before the kernel (2026-11-22, about 140 ms per step
under moderate load): GEMM 48 %, the batched attention matMuls 28 % (tfjs-wasm runs batched
matMuls as a scalar loop, about 1.4 GMAC/s), concat 3.5 %, sampling 4 %, GC 3 %.

How throughput grows with the batch (\`npx tsx libs/engine/bench/decode-scaling.bench.ts\`,
see "Decode scaling" below): the GEMM runs at about 20 GFLOP/s with 4 to 8 rows, half of
what the same XNNPACK reaches on large matrices (39 GFLOP/s, "Training" below), so each extra
sequence in a step costs almost as much as the first: batch 8 decodes 2-2.5x as many
tokens per second as batch 1, not 8x.

## What mattered

- Fused projections: q|k|v in one matMul and gate|up in another (weights concatenated at
  load). Per-op dispatch costs about 10 us on wasm (an add of two [8, 576] tensors), and the
  fused 1x576x960 matMul took 0.07 ms, so dispatches are a large share of a decode step.
- Weights stored transposed, [in, out], so every projection is a plain 2-D matMul: the
  transposeB variant of 1x576x1536 took 1.6 ms instead of 0.25 ms (64 rows: 58 ms vs 6 ms).
- A tied lm_head keeps its own transposed copy [hidden, vocab] for the same reason; the
  embedding lookup copies rows in JS from a Float32Array (no gather kernel, no extra heap).
- RoPE tables built once per forward in JS for all layers, with the 1/sqrt(head_dim)
  attention scale folded into the q half, and rotate_half done as one matMul by a signed
  permutation instead of slice/neg/concat.
- Grouped-query attention by grouping the query heads that share a KV head into one batch
  row: K and V are never tiled.
- One KV cache for the whole batch: rows grow by one column per step together; padding from
  joins is masked, and the cache is compacted when padding exceeds a quarter of its width.
- Peak memory: one tf.tidy per decoder block. Without it every intermediate of all 30 layers
  lived until the end of the forward pass (about 12 MB per layer for a 128-token prompt), and
  the wasm heap, which never shrinks, grew from 1.19 GB after the first join to 1.39 GB after
  eight (prompts of 24-80 tokens). With it the heap stays at 1.13 GB: the weights (0.51 GB)
  plus XNNPACK's packed copy of them, made on first use. See the optimisation log for the
  before/after peak RSS.
- Loading: each HF weight is transposed straight into its columns of the fused [in, out]
  buffer (no stacked [out, in] copy in between).
- Inference workers load for inference only (\`loadModel(dir, { inferenceOnly: true })\`, as
  this bench does): each projection is packed for the matmul kernel as it is read and its
  [in, out] copy freed before the next is read, so the weights are held once. Peak RSS after a
  100-token prompt and 5 steps (2026-11-24): 1310 MB against 912 MB (f32 weights); 1027 MB
  against 680 MB (bf16 weights, which the kernel keeps in bf16).
- Prefill attends one KV head at a time with plain 2-D matMuls (XNNPACK) instead of one batched
  matMul (scalar loop).
- Decoding attends with one WebAssembly SIMD kernel (src/kernels/decode-attention.ts, written
  in AssemblyScript under kernels/): all sequences and heads of a layer in one call, an online
  softmax in one pass over the cached columns, masked (padding) columns skipped, running on
  tfjs-wasm's own memory without copies. 3.2-3.9x faster per layer than the batched matMuls,
  mask and softmax it replaced (\`npx tsx libs/engine/bench/decode-attention.bench.ts\`, table
  in "Decode attention kernel" below); results equal to float32 rounding (test/decode-attention.spec.ts).

## What did not help

- The multi-threaded wasm build: with \`WASM_HAS_MULTITHREAD_SUPPORT\` forced on, backend
  initialisation fails in Node (emscripten starts its pthread workers from a \`blob:\` URL,
  which Node's Worker rejects), so wasm stays on one of the two cores.
- Transposed or batched matMuls for the projections (see above): XNNPACK's fast path only
  covers plain 2-D matMuls against a constant weight.
- Computing y^T = W x^T (HF layout as the left operand, the 8 activation rows packed as the
  "weight") to fill XNNPACK's row tiles at batch 8: not faster than x W^T in a micro-benchmark
  (run under load, so only a coarse comparison).
- Before the kernel, faster decode attention from another operand layout: q k^T, q (k^T),
  k q^T, p v, p (v^T)^T all took the same time (0.41-0.45 ms for 24 groups x 3 queries x 128
  keys); every batched matMul runs the same scalar loop.
- Not tried: a preallocated or tiled KV cache. The per-step concat it would remove is 3.5 % of
  a decode step at these lengths (profile above), while attending over two pieces costs extra
  dispatches; it would matter for much longer sequences.
- Building the one-hot targets as float32 directly, to skip a cast of [63, 49152]:
  \`tf.oneHot(..., 'float32')\` on wasm returns the int32 bit patterns (1.4e-45), not 1.0.
`;
  // Keep the sections other benchmarks write (Training, and whatever follows it).
  const previous = fs.existsSync(DOC) ? fs.readFileSync(DOC, 'utf8') : '';
  const at = previous.indexOf('\n## Training\n');
  fs.mkdirSync(path.dirname(DOC), { recursive: true });
  fs.writeFileSync(DOC, at >= 0 ? doc + previous.slice(at) : doc);
  console.log(`wrote ${DOC}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
