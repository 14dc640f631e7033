/**
 * Which models fit a CPU worker, checked by loading them: for each family's real shapes
 * (random bf16 weights, written by the model maker), each way a worker holds a model is tried
 * in a process of its own, smallest model first, until one does not load; the first failure
 * must be the clear "does not fit" error, never a crash. Writes the table to
 * docs/benchmarks.md (block `model-sizes`), which README's model section cites.
 *
 *   npx tsx libs/engine/bench/model-sizes.bench.ts            # every shape (about 25 GB of disk at once, at most)
 *   SHAPES=qwen3-0.6b,llama3.2-1b npx tsx libs/engine/bench/model-sizes.bench.ts
 *
 * The ways (what the workers' settings select): inference with the checkpoint's bf16 weights,
 * inference with WEIGHTS=q8, the same with MATMUL_THREADS=2 (packed weights in a memory of
 * their own), and training (the training worker: f32 weights for LoRA's gradients).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import type { ModelConfig } from '../src/config';
import { LoadedModel, loadModel, parameterCount } from '../src/loader';
import { makeModel, PRESETS } from '../src/maker/make-model';
import { writeDocBlock } from './doc-block';

/** Published shapes beyond the maker's presets (config.json of each Hugging Face repository). */
const SHAPES: Record<string, { preset: keyof typeof PRESETS; overrides?: Partial<ModelConfig> }> = {
  'gemma3-270m': { preset: 'gemma3-270m' },
  'qwen3-0.6b': { preset: 'qwen3-0.6b' },
  'llama3.2-1b': { preset: 'llama3.2-1b' },
  'gemma3-1b': {
    preset: 'gemma3-270m',
    overrides: {
      hiddenSize: 1152,
      intermediateSize: 6912,
      numLayers: 26,
      numHeads: 4,
      numKvHeads: 1,
      headDim: 256,
      // Every sixth layer global, as in the 270M.
      slidingWindow: { size: 512, layers: Array.from({ length: 26 }, (_, i) => (i + 1) % 6 !== 0), ropeTheta: 10000 },
    },
  },
  'qwen3-1.7b': { preset: 'qwen3-0.6b', overrides: { hiddenSize: 2048, intermediateSize: 6144, numLayers: 28, numHeads: 16, numKvHeads: 8, headDim: 128 } },
  'llama3.2-3b': { preset: 'llama3.2-1b', overrides: { hiddenSize: 3072, intermediateSize: 8192, numLayers: 28, numHeads: 24, numKvHeads: 8, headDim: 128 } },
  'qwen3-4b': { preset: 'qwen3-0.6b', overrides: { hiddenSize: 2560, intermediateSize: 9728, numLayers: 36, numHeads: 32, numKvHeads: 8, headDim: 128 } },
};

const WAYS = {
  'bf16, 1 thread': { inferenceOnly: true, weights: 'checkpoint', matmulThreads: 1 },
  'q8, 1 thread': { inferenceOnly: true, weights: 'q8', matmulThreads: 1 },
  'q8, 2 threads': { inferenceOnly: true, weights: 'q8', matmulThreads: 2 },
  'training, 1 thread': { inferenceOnly: false, weights: 'checkpoint', matmulThreads: 1 },
} as const;
type Way = keyof typeof WAYS;

interface Outcome {
  loaded: boolean;
  /** Resident memory of the process once loaded, or the error it met. */
  detail: string;
}

/** In the child: loads the model one way and reports as one JSON line. */
async function loadOnce(dir: string, way: Way): Promise<void> {
  await selectBackend('wasm');
  let lm: LoadedModel | undefined;
  try {
    lm = await loadModel(dir, { ...WAYS[way], readAhead: 'off', oneRowTile: 'narrow' });
    const gib = (process.memoryUsage().rss / 2 ** 30).toFixed(1);
    console.log(JSON.stringify({ loaded: true, detail: `${gib} GiB resident` }));
  } catch (err) {
    console.log(JSON.stringify({ loaded: false, detail: `${(err as Error).name}: ${(err as Error).message}` }));
  } finally {
    lm?.dispose();
  }
  process.exit(0);
}

function tryWay(dir: string, way: Way): Outcome {
  try {
    const out = execFileSync(process.execPath, [...process.execArgv, __filename, '--load', dir, way], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 24 });
    return JSON.parse(out.trim().split('\n').at(-1) as string) as Outcome;
  } catch (err) {
    // A process that died (a crash, not an error the loader threw) is what must never happen.
    const stderr = (err as { stderr?: string }).stderr ?? '';
    return { loaded: false, detail: `process died: ${stderr.trim().split('\n').filter(Boolean).at(-1) ?? (err as Error).message.split('\n')[0]}` };
  }
}

async function main(): Promise<void> {
  const names = (process.env['SHAPES'] ?? Object.keys(SHAPES).join(',')).split(',');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'trainyard-sizes-'));
  const results = new Map<string, Map<Way, Outcome>>();
  const stillFitting = new Set<Way>(Object.keys(WAYS) as Way[]);
  try {
    for (const name of names) {
      if (stillFitting.size === 0) break;
      const shape = SHAPES[name];
      const dir = path.join(root, name);
      const made = await makeModel({ preset: shape.preset, out: dir, dtype: 'BF16', shards: 4, overrides: shape.overrides });
      const row = new Map<Way, Outcome>();
      for (const way of Object.keys(WAYS) as Way[]) {
        // A way that failed on a smaller model is not tried on a larger one.
        if (!stillFitting.has(way)) continue;
        const outcome = tryWay(dir, way);
        row.set(way, outcome);
        if (!outcome.loaded) stillFitting.delete(way);
        console.log(`${name} (${(parameterCount(made.config) / 1e9).toFixed(2)}B) ${way}: ${outcome.loaded ? 'loads' : 'does not load'}, ${outcome.detail}`);
      }
      results.set(name, row);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  writeDocBlock(path.join(__dirname, '../../../docs/benchmarks.md'), 'model-sizes', table(results));
}

function table(results: Map<string, Map<Way, Outcome>>): string {
  const ways = Object.keys(WAYS) as Way[];
  const cell = (o: Outcome | undefined) => (o === undefined ? 'not tried (refused for a smaller model)' : o.loaded ? `loads (${o.detail})` : `**refused**: ${shortReason(o.detail)}`);
  const lines = [
    `Loaded on the wasm backend, ${cpuName()}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${new Date().toISOString().slice(0, 10)} (\`libs/engine/bench/model-sizes.bench.ts\`):`,
    '',
    `| model (random weights, bf16 checkpoint) | parameters | ${ways.join(' | ')} |`,
    `|---|---|${ways.map(() => '---').join('|')}|`,
  ];
  for (const [name, row] of results) {
    const { preset, overrides } = SHAPES[name];
    const params = parameterCount({ ...PRESETS[preset], ...overrides });
    lines.push(`| ${name} | ${(params / 1e9).toFixed(2)}B | ${ways.map((w) => cell(row.get(w))).join(' | ')} |`);
  }
  return lines.join('\n');
}

/** The CPU's name with its family and model where Linux tells them (the doc's machine table names machines by them). */
function cpuName(): string {
  const name = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const info = fs.existsSync('/proc/cpuinfo') ? fs.readFileSync('/proc/cpuinfo', 'utf8') : '';
  const field = (key: string) => new RegExp(`^${key}\\s*:\\s*(\\d+)`, 'm').exec(info)?.[1];
  const [family, model] = [field('cpu family'), field('model')];
  return family && model ? `${name} family ${family} model ${model}` : name;
}

/**
 * The loader's refusal without the error's name, the model's path and the advice that follows:
 * "its 1.72B parameters take at least 3.2 GiB as 16-bit weights". A process that died is shown whole.
 */
function shortReason(detail: string): string {
  const reason = detail
    .replace(/^ModelLoadError: \S*config\.json: /, '')
    .replace(/^(does not fit in the wasm backend's 4 GiB of memory \(WebAssembly's 32-bit limit\)|is too large to train on the wasm backend): /, '');
  return reason.split(/, above | \(matmul threads|; /)[0].replace(/\|/g, '/').slice(0, 200);
}

if (process.argv[2] === '--load') void loadOnce(process.argv[3], process.argv[4] as Way);
else void main();
