/**
 * Writes a model directory in Hugging Face layout with seeded random weights.
 *
 *   npx tsx libs/engine/src/cli/make-model.ts --preset tiny --out var/models/trainyard-tiny [--seed N]
 *
 * Shape flags override the preset: --vocab --hidden --intermediate --layers --heads
 * --kv-heads --head-dim --rope-theta --max-positions --arch llama|qwen2|qwen3|gemma3_text --untied
 * --rope-scaling llama3; storage: --dtype F32|F16|BF16 --shards N.
 */
import { parseArgs } from 'node:util';
import type { ModelConfig } from '../config';
import type { StorageDtype } from '../dtype';
import { PRESETS, Preset, makeModel } from '../maker/make-model';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'tiny' },
    out: { type: 'string' },
    seed: { type: 'string', default: '0' },
    dtype: { type: 'string', default: 'F32' },
    shards: { type: 'string', default: '1' },
    vocab: { type: 'string' },
    hidden: { type: 'string' },
    intermediate: { type: 'string' },
    layers: { type: 'string' },
    heads: { type: 'string' },
    'kv-heads': { type: 'string' },
    'head-dim': { type: 'string' },
    'rope-theta': { type: 'string' },
    'max-positions': { type: 'string' },
    arch: { type: 'string' },
    untied: { type: 'boolean', default: false },
    'rope-scaling': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help || !values.out) {
  console.log(`usage: make-model --preset ${Object.keys(PRESETS).join('|')} --out <dir> [--seed N] [shape flags]`);
  process.exit(values.help ? 0 : 2);
}
if (!(values.preset in PRESETS)) {
  console.error(`unknown preset ${values.preset}; one of ${Object.keys(PRESETS).join(', ')}`);
  process.exit(2);
}

const int = (v: string | undefined) => (v === undefined ? undefined : Number.parseInt(v, 10));
const overrides: Partial<ModelConfig> = Object.fromEntries(
  Object.entries({
    vocabSize: int(values.vocab),
    hiddenSize: int(values.hidden),
    intermediateSize: int(values.intermediate),
    numLayers: int(values.layers),
    numHeads: int(values.heads),
    numKvHeads: int(values['kv-heads']),
    headDim: int(values['head-dim']),
    ropeTheta: values['rope-theta'] === undefined ? undefined : Number(values['rope-theta']),
    maxPositionEmbeddings: int(values['max-positions']),
    modelType: values.arch as ModelConfig['modelType'] | undefined,
    tieWordEmbeddings: values.untied ? false : undefined,
    ropeScaling:
      values['rope-scaling'] === 'llama3'
        ? { type: 'llama3' as const, factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 }
        : undefined,
  }).filter(([, v]) => v !== undefined),
);
if (overrides.hiddenSize && overrides.numHeads && !overrides.headDim) overrides.headDim = overrides.hiddenSize / overrides.numHeads;

const started = Date.now();
const made = makeModel({
  preset: values.preset as Preset,
  out: values.out,
  seed: Number(values.seed),
  dtype: values.dtype.toUpperCase() as StorageDtype,
  shards: Number(values.shards),
  overrides,
});
console.log(`wrote ${made.files.length} files to ${made.dir} in ${Date.now() - started} ms`);
