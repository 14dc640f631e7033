import * as fs from 'node:fs';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import { LoadedModel, loadModel } from '../src/loader';
import { applyAdapter } from '../src/lora/lora-layer';
import { DEFAULT_LORA_SPEC, initLoraWeights } from '../src/lora/peft';

const MODELS = path.resolve(__dirname, '../../../var/models');
const F32_DIR = path.join(MODELS, 'bench-smollm2-135m');
const BF16_DIR = path.join(MODELS, 'bench-smollm2-135m-bf16');

/**
 * The bench model loaded for inference on wasm three ways, as an inference worker would hold
 * it: f32 and bf16 (the checkpoint stored in bf16) as stored, and the f32 checkpoint quantized
 * to q8 at load; each with the layout and plan that timing at load chose (bf16 is named with
 * its layout: in pairs or panels apart, kernels/matmul.ts's tuneMatMul). generate.bench.ts
 * makes the two checkpoints (once without and once with WEIGHTS=bf16). With `lora`, one more:
 * f32 serving a LoRA checkpoint (the default spec, r 8 on all seven projections, as training
 * makes them); with `otherLayout`, the bf16 checkpoint in the layout timing did not choose
 * (oneRowTile 'paired', or 'narrow' for panels apart).
 */
export async function loadWeightVariants(options: { lora?: boolean; otherLayout?: boolean } = {}): Promise<[string, LoadedModel][]> {
  for (const dir of [F32_DIR, BF16_DIR]) {
    if (!fs.existsSync(path.join(dir, 'model.safetensors'))) throw new Error(`no model at ${dir}: run generate.bench.ts (with and without WEIGHTS=bf16) first`);
  }
  await selectBackend('wasm');
  const bf16 = await loadModel(BF16_DIR, { inferenceOnly: true });
  const inPairs = bf16.model.matmulPlan.oneRowTile === 'paired';
  const variants: [string, LoadedModel][] = [
    ['f32', await loadModel(F32_DIR, { inferenceOnly: true })],
    [inPairs ? 'bf16 (timed: in pairs)' : 'bf16 (timed: panels apart)', bf16],
    ['q8', await loadModel(F32_DIR, { inferenceOnly: true, weights: 'q8' })],
  ];
  if (options.lora) {
    const served = await loadModel(F32_DIR, { inferenceOnly: true });
    applyAdapter(served, { spec: DEFAULT_LORA_SPEC, tensors: initLoraWeights(served.config, DEFAULT_LORA_SPEC, 1) });
    variants.push(['f32 + LoRA r 8', served]);
  }
  if (options.otherLayout) {
    variants.push(inPairs ? ['bf16, panels apart', await loadModel(BF16_DIR, { inferenceOnly: true, oneRowTile: 'narrow' })] : ['bf16, in pairs', await loadModel(BF16_DIR, { inferenceOnly: true, oneRowTile: 'paired' })]);
  }
  return variants;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
