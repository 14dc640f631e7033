import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelConfig } from '../../../libs/engine/src/config';
import type { StorageDtype } from '../../../libs/engine/src/dtype';
import { makeModel, Preset, PRESETS } from '../../../libs/engine/src/maker/make-model';

/** A variant of a preset's shape: `name` tells it apart on disk. */
export interface BenchVariant {
  name: string;
  overrides: Partial<ModelConfig>;
}

/**
 * The directory of a `preset`-shaped model (or its `variant`) with random weights (the model
 * maker's, seed 0) that the host-side benches share, made on first use. It lives under tmp/,
 * not var/models/, where `npm start` would serve it as a base model.
 */
export function benchModel(preset: Preset, variant?: BenchVariant): string {
  const dir = path.join('tmp', 'bench-models', variant ? `${preset}-${variant.name}` : preset);
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) makeModel({ preset, out: dir, seed: 0, overrides: variant?.overrides });
  return dir;
}

/** A model shape the GPU benches measure: a preset with overrides, its weights stored in `dtype`. */
export interface BenchShape {
  name: string;
  preset: Preset;
  overrides: Partial<ModelConfig>;
  /** How the maker stores the weights (bf16 halves the larger models' files; PyTorch computes on them as float32, the engine on webgpu holds them in 16 bits and computes in float32). */
  dtype?: StorageDtype;
}

/** A shape's whole configuration: its preset's, with its overrides. */
export const configOf = (shape: BenchShape): ModelConfig => ({ ...PRESETS[shape.preset], ...shape.overrides });

/** What every Qwen2.5 shape shares. */
const QWEN25: Partial<ModelConfig> = {
  modelType: 'qwen2',
  vocabSize: 151936,
  rmsNormEps: 1e-6,
  ropeTheta: 1_000_000,
  maxPositionEmbeddings: 32768,
  tieWordEmbeddings: true,
};

/** The shapes measured by default. */
export const BENCH_SHAPES: BenchShape[] = [
  { name: 'smollm2-135m', preset: 'smollm2-135m', overrides: {} },
  {
    name: 'qwen2.5-0.5b',
    preset: 'smollm2-135m',
    overrides: { ...QWEN25, hiddenSize: 896, intermediateSize: 4864, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64 },
  },
];

/** Measured only when named (--only): their random weights take minutes to make. */
export const LARGE_BENCH_SHAPES: BenchShape[] = [qwen25('qwen2.5-1.5b', 1536, 8960, 28, 12), qwen25('qwen2.5-3b', 2048, 11008, 36, 16)];

/** A Qwen2.5 shape from the smollm2-135m preset: hidden, intermediate, layers, heads, and 2 KV heads of 128 dimensions. */
function qwen25(name: string, hiddenSize: number, intermediateSize: number, numLayers: number, numHeads: number): BenchShape {
  return {
    name,
    preset: 'smollm2-135m',
    dtype: 'BF16',
    overrides: { ...QWEN25, hiddenSize, intermediateSize, numLayers, numHeads, numKvHeads: 2, headDim: 128 },
  };
}

/** The shapes of a smoke run (--smoke): the tiny preset's, f32 and bf16. */
const SMOKE_BENCH_SHAPES: BenchShape[] = [
  { name: 'tiny', preset: 'tiny', overrides: {} },
  { name: 'tiny-qwen2', preset: 'tiny', dtype: 'BF16', overrides: { modelType: 'qwen2', tieWordEmbeddings: true } },
];

/** The shapes a run measures: the smoke ones, those `named` (--only) among all, or the default ones. */
export function benchShapes(smoke: boolean, named: string[] | undefined): BenchShape[] {
  if (smoke) return SMOKE_BENCH_SHAPES;
  return named ? [...BENCH_SHAPES, ...LARGE_BENCH_SHAPES].filter((s) => named.includes(s.name)) : BENCH_SHAPES;
}
