/**
 * llama.cpp against the engine on the same machine, the same weights and one thread each:
 * decoding one sequence, greedy, with f32, bf16 and 8-bit weights (llama.cpp's Q8_0, the
 * engine's q8: both blocks of 32 weights with one scale). llama.cpp runs through
 * node-llama-cpp's prebuilt binaries, which carry a build of ggml per x86-64 generation (AVX2,
 * AVX-512, Zen 4...) and load the one this CPU runs best; the engine's bench model
 * (var/models/bench-smollm2-135m and its bf16 twin, made by generate.bench.ts with and without
 * WEIGHTS=bf16) is written as GGUF by gguf.ts.
 *
 *   npm install --prefix tmp/llamacpp --no-save node-llama-cpp@3.22.1    # once: the peer, not a dependency
 *   npx tsx --tsconfig tsconfig.base.json tools/bench/llamacpp/llamacpp.bench.ts   (ROUNDS=5 STEPS=48)
 *
 * Per round, each of the seven (the engine and llama.cpp in each format, the engine's bf16
 * weights both with their panels apart, oneRowTile 'narrow', and in pairs, 'paired': the
 * layouts its timing at load chooses between) decodes STEPS tokens
 * after a 24-token prompt, in turn; prints the median and range over ROUNDS of tokens/s, and
 * for each format whether the two chose the same greedy tokens (the check that both run the
 * same model).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { selectBackend } from '../../../libs/engine/src/backend';
import { DecodeBatch } from '../../../libs/engine/src/decode-batch';
import { loadModel, LoadedModel } from '../../../libs/engine/src/loader';
import { argmax } from '../../../libs/engine/src/sampling';
import { GgufWeights, writeGguf } from './gguf';

const ROOT = path.resolve(__dirname, '../../..');
const MODEL_DIR = path.join(ROOT, 'var/models/bench-smollm2-135m');
const BF16_DIR = path.join(ROOT, 'var/models/bench-smollm2-135m-bf16');
const PEER = path.join(ROOT, 'tmp/llamacpp');
const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const STEPS = Number(process.env['STEPS'] ?? 48);
const PROMPT = Array.from({ length: 24 }, (_, i) => 3 + ((i * 7919) % 40000));

/** One decoder: decodes STEPS greedy tokens after PROMPT, returning tokens/s and the tokens. */
type Decoder = () => Promise<{ rate: number; tokens: number[] }>;

function engineDecoder(lm: LoadedModel): Decoder {
  return async () => {
    const batch = new DecodeBatch<number>(lm.model);
    try {
      let next = argmax(await batch.join(0, PROMPT));
      const tokens = [next];
      const t0 = performance.now();
      for (let s = 1; s < STEPS; s++) {
        next = argmax((await batch.step(new Map([[0, next]]))).get(0) as Float32Array);
        tokens.push(next);
      }
      return { rate: (STEPS - 1) / ((performance.now() - t0) / 1000), tokens };
    } finally {
      batch.dispose();
    }
  };
}

/** node-llama-cpp's API, as far as this bench uses it. */
interface LlamaSequence {
  evaluate(tokens: number[], options: { temperature: number }): AsyncGenerator<number>;
  clearHistory(): Promise<void>;
}

async function llamaDecoders(files: Record<GgufWeights, string>): Promise<Record<GgufWeights, Decoder>> {
  const entry = path.join(PEER, 'node_modules/node-llama-cpp/dist/index.js');
  if (!fs.existsSync(entry)) throw new Error(`no node-llama-cpp under ${PEER}: npm install --prefix tmp/llamacpp --no-save node-llama-cpp@3.22.1`);
  const { getLlama } = (await import(entry)) as { getLlama(o: object): Promise<{ loadModel(o: object): Promise<{ createContext(o: object): Promise<{ getSequence(): LlamaSequence }> }> }> };
  const llama = await getLlama({ gpu: false, build: 'never' });
  const decoderOf = async (file: string): Promise<Decoder> => {
    const model = await llama.loadModel({ modelPath: file });
    const context = await model.createContext({ contextSize: 256, threads: 1, batchSize: 64 });
    const sequence = context.getSequence();
    return async () => {
      await sequence.clearHistory();
      const tokens: number[] = [];
      let t0 = 0;
      for await (const token of sequence.evaluate(PROMPT, { temperature: 0 })) {
        if (tokens.length === 0) t0 = performance.now();
        tokens.push(token);
        if (tokens.length === STEPS) break;
      }
      return { rate: (STEPS - 1) / ((performance.now() - t0) / 1000), tokens };
    };
  };
  return { f32: await decoderOf(files.f32), bf16: await decoderOf(files.bf16), q8_0: await decoderOf(files.q8_0) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  await selectBackend('wasm');
  for (const dir of [MODEL_DIR, BF16_DIR]) {
    if (!fs.existsSync(path.join(dir, 'model.safetensors'))) throw new Error(`no model at ${dir}: run libs/engine/bench/generate.bench.ts with and without WEIGHTS=bf16`);
  }
  const gguf = (w: GgufWeights) => {
    const file = path.join(PEER, `bench-smollm2-135m-${w}.gguf`);
    return fs.existsSync(file) ? file : writeGguf(w === 'bf16' ? BF16_DIR : MODEL_DIR, file, w);
  };
  const peer = await llamaDecoders({ f32: gguf('f32'), bf16: gguf('bf16'), q8_0: gguf('q8_0') });
  const decoders: [string, Decoder][] = [
    ['engine, f32', engineDecoder(await loadModel(MODEL_DIR, { inferenceOnly: true }))],
    ['llama.cpp, f32', peer.f32],
    ['engine, bf16 (panels apart)', engineDecoder(await loadModel(BF16_DIR, { inferenceOnly: true, oneRowTile: 'narrow' }))],
    ['llama.cpp, BF16', peer.bf16],
    ['engine, bf16 in pairs', engineDecoder(await loadModel(BF16_DIR, { inferenceOnly: true, oneRowTile: 'paired' }))],
    ['engine, q8', engineDecoder(await loadModel(MODEL_DIR, { inferenceOnly: true, weights: 'q8' }))],
    ['llama.cpp, Q8_0', peer.q8_0],
  ];
  const rates = new Map<string, number[]>(decoders.map(([name]) => [name, []]));
  const tokens = new Map<string, number[]>();
  for (const [name, decode] of decoders) tokens.set(name, (await decode()).tokens); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, decode] of decoders) (rates.get(name) as number[]).push((await decode()).rate);
  }
  const same = (a: string, b: string) => (tokens.get(a) ?? []).findIndex((t, i) => t !== (tokens.get(b) ?? [])[i]);
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, load average ${os.loadavg()[0].toFixed(1)}`);
  console.log(`decode, batch 1, one thread (${ROUNDS} rounds, alternating, ${STEPS} tokens after a ${PROMPT.length}-token prompt)\n`);
  console.log('| decoder | median tokens/s | range |\n|---|---|---|');
  for (const [name, r] of rates) console.log(`| ${name} | ${median(r).toFixed(1)} | ${Math.min(...r).toFixed(1)}-${Math.max(...r).toFixed(1)} |`);
  const agreement = (a: string, b: string) => {
    const at = same(a, b);
    return at < 0 ? `all ${STEPS} the same` : `first difference at token ${at}`;
  };
  console.log(
    `\ngreedy tokens, engine against llama.cpp: f32 ${agreement('engine, f32', 'llama.cpp, f32')}; bf16 ${agreement('engine, bf16 (panels apart)', 'llama.cpp, BF16')}; 8-bit ${agreement('engine, q8', 'llama.cpp, Q8_0')}`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
