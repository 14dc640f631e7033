/**
 * Each family's real shape (Qwen3-0.6B, Gemma-3-270M, Llama-3.2-1B; random weights made by the
 * model maker) on the engine, llama.cpp and PyTorch eager, one thread each on the same machine:
 * one sequence, a PROMPT-token prompt prefilled (tokens/s) and STEPS greedy tokens decoded
 * after it at batch 1 (tokens/s over the STEPS - 1 after the first, which the prefill's logits
 * give). The engine runs with f32 and q8 weights (wasm, one matmul thread), llama.cpp with F32
 * and Q8_0 (node-llama-cpp 3.22.1's prebuilt CPU binaries, the GGUF written by gguf.ts), PyTorch
 * eager in f32 (tools/bench/gpu/torch_peer.py, OMP/OpenBLAS/MKL on one thread).
 *
 *   npm install --prefix tmp/llamacpp --no-save node-llama-cpp@3.22.1    # once: the peer, not a dependency
 *   npx tsx --tsconfig tsconfig.base.json tools/bench/llamacpp/families.bench.ts   (ROUNDS=3 STEPS=32 PROMPT=128 FAMILIES=...)
 *   npx tsx --tsconfig tsconfig.base.json tools/bench/llamacpp/families.bench.ts --check
 *
 * Every measurement is a process of its own, one at a time (a 1B model in f32 takes about 5 GB
 * a copy): it loads the model, warms up on a short prompt, then times one prefill and decode.
 * Round after round the decoders take turns; the table gives the median over ROUNDS. The models
 * go to var/models/bench-<shape>, the GGUF files to tmp/llamacpp/, each made once.
 *
 * --check runs each family's tiny preset (in the layout llama.cpp can run: Gemma 3's window on
 * five layers of six, query_pre_attn_scalar = head_dim) through all three and prints whether
 * llama.cpp's and PyTorch's greedy tokens equal the engine's, and PyTorch's largest logprob
 * difference: the check that the peers run the same models.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { selectBackend } from '../../../libs/engine/src/backend';
import type { ModelConfig } from '../../../libs/engine/src/config';
import { DecodeBatch } from '../../../libs/engine/src/decode-batch';
import { loadModel } from '../../../libs/engine/src/loader';
import { makeModel, Preset } from '../../../libs/engine/src/maker/make-model';
import { argmax } from '../../../libs/engine/src/sampling';
import { GgufWeights, writeGguf } from './gguf';

const ROOT = path.resolve(__dirname, '../../..');
const PEER = path.join(ROOT, 'tmp/llamacpp');
const TORCH_PEER = path.join(ROOT, 'tools/bench/gpu/torch_peer.py');
const ROUNDS = Number(process.env['ROUNDS'] ?? 3);
const STEPS = Number(process.env['STEPS'] ?? 32);
const PROMPT_TOKENS = Number(process.env['PROMPT'] ?? 128);

/** The shapes timed, and the tiny ones checked, each with what makes it (a maker preset, overrides). */
interface Shape {
  preset: Preset;
  overrides?: Partial<ModelConfig>;
}
const SHAPES: Record<string, Shape> = {
  'qwen3-0.6b': { preset: 'qwen3-0.6b' },
  'gemma3-270m': { preset: 'gemma3-270m' },
  'llama3.2-1b': { preset: 'llama3.2-1b' },
};
const TINY: Record<string, Shape> = {
  'tiny-qwen3': { preset: 'tiny-qwen3' },
  // llama.cpp fixes Gemma 3's pattern (five windowed layers, then a global one) and scales scores by head_dim^-0.5.
  'tiny-gemma3': { preset: 'tiny-gemma3', overrides: { numLayers: 6, queryPreAttnScalar: 32, slidingWindow: { size: 8, layers: [true, true, true, true, true, false], ropeTheta: 10000 } } },
  // Untied, so that greedy decoding does not repeat the prompt's last token (a tied random model's likeliest next token is itself).
  'tiny-llama3.2': { preset: 'tiny-llama3.2', overrides: { tieWordEmbeddings: false } },
};

/** The decoders of the table: who runs, with which weights. */
const DECODERS = [
  { name: 'engine, f32', kind: 'engine', weights: 'f32' },
  { name: 'engine, q8', kind: 'engine', weights: 'q8' },
  { name: 'llama.cpp, F32', kind: 'llamacpp', weights: 'f32' },
  { name: 'llama.cpp, Q8_0', kind: 'llamacpp', weights: 'q8_0' },
  { name: 'PyTorch eager, f32', kind: 'torch', weights: 'f32' },
] as const;
type Decoder = (typeof DECODERS)[number];

/** What one measurement reports: tokens/s of the prefill and of decoding, the greedy tokens and (engine, PyTorch) their logprobs. */
interface Run {
  prefill: number;
  decode: number;
  tokens: number[];
  logprobs?: number[];
  error?: string;
}

/** A prompt of `n` ids spread over the vocabulary, past the specials. */
const prompt = (n: number, vocab: number) => Array.from({ length: n }, (_, i) => 300 + ((i * 7919) % (vocab - 300)));

function logSoftmaxAt(logits: Float32Array, index: number): number {
  let max = -Infinity;
  for (const v of logits) max = Math.max(max, v);
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  return logits[index] - max - Math.log(sum);
}

/** In a child: the engine on `dir`, one matmul thread. */
async function runEngine(dir: string, weights: 'f32' | 'q8', ids: number[], steps: number): Promise<Run> {
  await selectBackend('wasm');
  const lm = await loadModel(dir, { inferenceOnly: true, matmulThreads: 1, weights: weights === 'q8' ? 'q8' : 'checkpoint' });
  const generate = async (p: number[], n: number): Promise<Run> => {
    const batch = new DecodeBatch<number>(lm.model);
    try {
      const t0 = performance.now();
      let logits = await batch.join(0, p);
      const t1 = performance.now();
      const tokens: number[] = [];
      const logprobs: number[] = [];
      for (;;) {
        const next = argmax(logits);
        tokens.push(next);
        logprobs.push(logSoftmaxAt(logits, next));
        if (tokens.length === n) break;
        logits = (await batch.step(new Map([[0, next]]))).get(0) as Float32Array;
      }
      const t2 = performance.now();
      return { prefill: p.length / ((t1 - t0) / 1000), decode: (n - 1) / ((t2 - t1) / 1000), tokens, logprobs };
    } finally {
      batch.dispose();
    }
  };
  await generate(ids.slice(0, 8), 2);
  return generate(ids, steps);
}

/** node-llama-cpp's API, as far as this bench uses it. */
interface LlamaSequence {
  evaluate(tokens: number[], options: { temperature: number }): AsyncGenerator<number>;
  evaluateWithMetadata(tokens: number[], metadata: { confidence: true }, options: { temperature: number }): AsyncGenerator<{ token: number; confidence: number }>;
  clearHistory(): Promise<void>;
}
type GetLlama = (o: object) => Promise<{ loadModel(o: object): Promise<{ createContext(o: object): Promise<{ getSequence(): LlamaSequence }> }> }>;

/** In a child: llama.cpp on a GGUF file, one thread; the prompt in one batch. With `logprobs` (untimed), each token's probability too. */
async function runLlamaCpp(file: string, ids: number[], steps: number, logprobs = false): Promise<Run> {
  const entry = path.join(PEER, 'node_modules/node-llama-cpp/dist/index.js');
  if (!fs.existsSync(entry)) throw new Error(`no node-llama-cpp under ${PEER}: npm install --prefix tmp/llamacpp --no-save node-llama-cpp@3.22.1`);
  const { getLlama } = (await import(entry)) as { getLlama: GetLlama };
  const llama = await getLlama({ gpu: false, build: 'never' });
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ contextSize: 2 * (ids.length + steps), threads: 1, batchSize: ids.length });
  const sequence = context.getSequence();
  const generate = async (p: number[], n: number): Promise<Run> => {
    await sequence.clearHistory();
    const tokens: number[] = [];
    const t0 = performance.now();
    let t1 = t0;
    for await (const token of sequence.evaluate(p, { temperature: 0 })) {
      if (tokens.length === 0) t1 = performance.now();
      tokens.push(token);
      if (tokens.length === n) break;
    }
    const t2 = performance.now();
    return { prefill: p.length / ((t1 - t0) / 1000), decode: (n - 1) / ((t2 - t1) / 1000), tokens };
  };
  if (logprobs) {
    const run: Run = { prefill: NaN, decode: NaN, tokens: [], logprobs: [] };
    for await (const { token, confidence } of sequence.evaluateWithMetadata(ids, { confidence: true }, { temperature: 0 })) {
      run.tokens.push(token);
      run.logprobs?.push(Math.log(confidence));
      if (run.tokens.length === steps) break;
    }
    return run;
  }
  await generate(ids.slice(0, 8), 2);
  return generate(ids, steps);
}

/** PyTorch eager on one thread, in its own process (torch_peer.py's "generate"). */
function runTorch(dir: string, ids: number[], steps: number): Run {
  // The first python3 with torch: PATH's, else Debian's (python3-torch).
  const python = ['python3', '/usr/bin/python3'].find((p) => spawnSync(p, ['-c', 'import torch']).status === 0);
  if (!python) return { prefill: NaN, decode: NaN, tokens: [], error: 'no python3 with torch' };
  const plan = JSON.stringify({ generate: { prompt: ids, steps } });
  const env = { ...process.env, CUDA_VISIBLE_DEVICES: '', OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };
  const out = spawnSync(python, [TORCH_PEER, dir, plan], { env, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (out.status !== 0) return { prefill: NaN, decode: NaN, tokens: [], error: lastLine(out.stderr) };
  return (JSON.parse(lastLine(out.stdout)) as { generate: Run }).generate;
}

const lastLine = (s: string) => s.trim().split('\n').filter(Boolean).at(-1) ?? '';

/** Runs this file again as a child (engine or llama.cpp), so that each measurement has the machine's memory to itself. */
function child(args: string[]): Run {
  const out = spawnSync(process.execPath, [...process.execArgv, __filename, ...args], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const line = lastLine(out.stdout);
  if (out.status === 0 && line.startsWith('{')) return JSON.parse(line) as Run;
  // The error's own line, not the last of its stack.
  const error = out.stderr.split('\n').find((l) => /\w*Error\b/.test(l)) ?? lastLine(out.stderr);
  return { prefill: NaN, decode: NaN, tokens: [], error: error.trim() || `exit ${out.status} ${out.signal ?? ''}` };
}

/** The f32 model directory of a shape, made once (in a child: the maker holds every weight while it writes). */
function modelDir(name: string): string {
  const dir = path.join(ROOT, 'var/models', `bench-${name}`);
  if (!fs.existsSync(path.join(dir, 'config.json'))) {
    const out = spawnSync(process.execPath, [...process.execArgv, __filename, '--make', name, dir], { stdio: 'inherit' });
    if (out.status !== 0) throw new Error(`making ${name} failed`);
  }
  return dir;
}

function ggufFile(name: string, dir: string, weights: GgufWeights): string {
  const file = path.join(PEER, `bench-${name}-${weights}.gguf`);
  if (!fs.existsSync(file)) {
    writeGguf(dir, `${file}.partial`, weights);
    fs.renameSync(`${file}.partial`, file);
  }
  return file;
}

function measure(decoder: Decoder, name: string, dir: string, ids: number[], steps: number): Run {
  if (decoder.kind === 'torch') return runTorch(dir, ids, steps);
  if (decoder.kind === 'engine') return child(['--engine', dir, decoder.weights, JSON.stringify(ids), String(steps)]);
  return child(['--llamacpp', ggufFile(name, dir, decoder.weights), JSON.stringify(ids), String(steps)]);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const firstDifference = (a: number[], b: number[]) => a.findIndex((t, i) => t !== b[i]);

function machine(): string {
  return `${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, load average ${os.loadavg()[0].toFixed(1)}`;
}

async function bench(): Promise<void> {
  const names = (process.env['FAMILIES'] ?? Object.keys(SHAPES).join(',')).split(',');
  console.log(machine());
  console.log(`one thread each; a ${PROMPT_TOKENS}-token prefill, then ${STEPS} greedy tokens at batch 1; medians of ${ROUNDS} rounds, decoders in turn\n`);
  const rows: string[] = [];
  const notes: string[] = [];
  for (const name of names) {
    const dir = modelDir(name);
    const vocab = (JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size;
    const ids = prompt(PROMPT_TOKENS, vocab);
    const runs = new Map<string, Run[]>(DECODERS.map((d) => [d.name, []]));
    const failed = new Map<string, string>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const decoder of DECODERS) {
        // A decoder that failed once (a model that does not fit) is not run again.
        if (failed.has(decoder.name)) continue;
        const run = measure(decoder, name, dir, ids, STEPS);
        console.log(`${name}, ${decoder.name}, round ${round + 1}: ${run.error ?? `prefill ${run.prefill.toFixed(1)}, decode ${run.decode.toFixed(2)} tokens/s`}`);
        if (run.error) failed.set(decoder.name, run.error);
        else (runs.get(decoder.name) as Run[]).push(run);
      }
    }
    const cell = (d: Decoder) => {
      const rs = runs.get(d.name) as Run[];
      return rs.length ? `${median(rs.map((r) => r.prefill)).toFixed(1)} / ${median(rs.map((r) => r.decode)).toFixed(2)}` : 'did not run';
    };
    rows.push(`| ${name} | ${DECODERS.map(cell).join(' | ')} |`);
    for (const d of DECODERS) if (failed.has(d.name)) notes.push(`${name}, ${d.name}: ${failed.get(d.name)}`);
    const tokensOf = (n: string) => runs.get(n)?.[0]?.tokens ?? [];
    const agree = (a: string, b: string) => {
      if (!tokensOf(a).length || !tokensOf(b).length) return `${b}: not run`;
      const at = firstDifference(tokensOf(a), tokensOf(b));
      return `${b}: ${at < 0 ? `all ${STEPS} the same` : `first difference at token ${at}`}`;
    };
    notes.push(
      `${name}, greedy tokens against engine f32: ${agree('engine, f32', 'llama.cpp, F32')}; ${agree('engine, f32', 'PyTorch eager, f32')}; ` +
        `llama.cpp F32 against PyTorch: ${agree('llama.cpp, F32', 'PyTorch eager, f32')}; engine q8 against llama.cpp Q8_0: ${agree('engine, q8', 'llama.cpp, Q8_0')}`,
    );
  }
  const header = `| tokens/s, prefill / decode | ${DECODERS.map((d) => d.name).join(' | ')} |\n|---|${DECODERS.map(() => '---|').join('')}`;
  console.log(`\n${machine()}\n\n${header}\n${rows.join('\n')}\n`);
  for (const n of notes) console.log(n);
}

/** The tiny presets through all three: the peers' greedy tokens against the engine's. */
async function check(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'trainyard-families-'));
  const steps = 24;
  try {
    for (const [name, shape] of Object.entries(TINY)) {
      const dir = path.join(root, name);
      const { config } = makeModel({ preset: shape.preset, out: dir, seed: 1, overrides: shape.overrides });
      // 16 prompt tokens and 24 generated: past Gemma's 8-position window.
      const ids = prompt(16, config.vocabSize);
      const engine = child(['--engine', dir, 'f32', JSON.stringify(ids), String(steps)]);
      const file = writeGguf(dir, path.join(root, `${name}.gguf`), 'f32');
      const llama = child(['--llamacpp', file, JSON.stringify(ids), String(steps), 'logprobs']);
      const torch = runTorch(dir, ids, steps);
      const same = (r: Run) => (r.error ? r.error : firstDifference(engine.tokens, r.tokens) < 0 ? `all ${steps} tokens the same` : `first difference at token ${firstDifference(engine.tokens, r.tokens)}`);
      const maxDiff = (r: Run) => Math.max(...(engine.logprobs ?? []).map((l, i) => Math.abs(l - (r.logprobs?.[i] ?? NaN)))).toExponential(2);
      console.log(`${name}: engine ${JSON.stringify(engine.tokens)}`);
      console.log(`  llama.cpp F32: ${same(llama)}, largest |logprob difference| ${maxDiff(llama)}; PyTorch: ${same(torch)}, ${maxDiff(torch)}`);
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const [mode, ...args] = process.argv.slice(2);
  if (mode === '--make') {
    const shape = SHAPES[args[0]];
    makeModel({ preset: shape.preset, out: args[1], seed: 0, overrides: shape.overrides });
  } else if (mode === '--engine') {
    console.log(JSON.stringify(await runEngine(args[0], args[1] as 'f32' | 'q8', JSON.parse(args[2]) as number[], Number(args[3]))));
    process.exit(0);
  } else if (mode === '--llamacpp') {
    console.log(JSON.stringify(await runLlamaCpp(args[0], JSON.parse(args[1]) as number[], Number(args[2]), args[3] === 'logprobs')));
    process.exit(0);
  } else if (mode === '--check') await check();
  else await bench();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
