import * as fs from 'node:fs';
import * as path from 'node:path';
import { ModelConfig, parseModelConfig } from '../config';
import { ModelLoadError } from '../errors';
import { SeededRandom } from '../random';
import { SafetensorsFile, TensorToWrite, writeSafetensors } from '../safetensors';

/**
 * LoRA adapters in Hugging Face PEFT's on-disk layout, so an adapter trained here loads in
 * HF PEFT and vLLM by name and shape:
 *
 *   adapter_config.json        peft_type LORA, task_type CAUSAL_LM, r, lora_alpha, target_modules
 *   adapter_model.safetensors  base_model.model.model.layers.{i}.{self_attn|mlp}.{proj}.lora_A.weight [r, in]
 *                              ...lora_B.weight [out, r]
 *
 * A projection's output becomes base(x) + (alpha / r) * B(A(x)); B starts at zero so a fresh
 * adapter leaves the model unchanged.
 */

export type LoraTarget = 'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj';

export const LORA_TARGETS: readonly LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

export interface LoraSpec {
  r: number;
  alpha: number;
  targetModules: LoraTarget[];
}

/** The reference trainer's defaults. */
export const DEFAULT_LORA_SPEC: LoraSpec = { r: 8, alpha: 16, targetModules: [...LORA_TARGETS] };

export interface AdapterTensor {
  shape: number[];
  data: Float32Array;
}

export type AdapterTensors = Map<string, AdapterTensor>;

export interface PeftAdapter {
  /** base_model_name_or_path: the base model's id or directory. */
  baseModel: string;
  spec: LoraSpec;
  tensors: AdapterTensors;
}

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

/** The HF submodule a target lives in. */
export function loraModule(target: LoraTarget): 'self_attn' | 'mlp' {
  return target === 'gate_proj' || target === 'up_proj' || target === 'down_proj' ? 'mlp' : 'self_attn';
}

/** PEFT's name of one LoRA matrix. */
export function loraTensorName(layer: number, target: LoraTarget, matrix: 'A' | 'B'): string {
  return `base_model.model.model.layers.${layer}.${loraModule(target)}.${target}.lora_${matrix}.weight`;
}

/** [in, out] features of a target projection in a model of this config. */
export function loraTargetShape(config: ModelConfig, target: LoraTarget): { inFeatures: number; outFeatures: number } {
  const { hiddenSize: C, intermediateSize: I, numHeads: H, numKvHeads: KV, headDim: D } = config;
  switch (target) {
    case 'q_proj':
      return { inFeatures: C, outFeatures: H * D };
    case 'k_proj':
    case 'v_proj':
      return { inFeatures: C, outFeatures: KV * D };
    case 'o_proj':
      return { inFeatures: H * D, outFeatures: C };
    case 'gate_proj':
    case 'up_proj':
      return { inFeatures: C, outFeatures: I };
    case 'down_proj':
      return { inFeatures: I, outFeatures: C };
  }
}

/** Every tensor an adapter of this spec has, with its shape, in layer then target order. */
export function loraTensorShapes(config: ModelConfig, spec: LoraSpec): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const target of LORA_TARGETS) {
      if (!spec.targetModules.includes(target)) continue;
      const { inFeatures, outFeatures } = loraTargetShape(config, target);
      out.set(loraTensorName(layer, target, 'A'), [spec.r, inFeatures]);
      out.set(loraTensorName(layer, target, 'B'), [outFeatures, spec.r]);
    }
  }
  return out;
}

/** Throws on a spec PEFT would not accept or the engine cannot apply. */
export function validateLoraSpec(spec: LoraSpec): void {
  if (!Number.isInteger(spec.r) || spec.r < 1) throw new Error(`LoRA r must be a positive integer, got ${spec.r}`);
  if (!(Number.isFinite(spec.alpha) && spec.alpha > 0)) throw new Error(`LoRA alpha must be a positive number, got ${spec.alpha}`);
  if (spec.targetModules.length === 0) throw new Error('LoRA target_modules is empty');
  for (const t of spec.targetModules) {
    if (!LORA_TARGETS.includes(t)) throw new Error(`unsupported LoRA target module "${t}" (supported: ${LORA_TARGETS.join(', ')})`);
  }
}

/**
 * Fresh adapter weights as PEFT initialises them: A ~ kaiming_uniform(a = sqrt(5)), which is
 * U(-1/sqrt(in), 1/sqrt(in)), and B = 0, so the adapted model starts equal to the base.
 */
export function initLoraWeights(config: ModelConfig, spec: LoraSpec, seed: number): AdapterTensors {
  validateLoraSpec(spec);
  const rng = new SeededRandom(seed);
  const out: AdapterTensors = new Map();
  for (const [name, shape] of loraTensorShapes(config, spec)) {
    const data = new Float32Array(shape[0] * shape[1]);
    if (name.endsWith('lora_A.weight')) {
      const bound = 1 / Math.sqrt(shape[1]);
      for (let i = 0; i < data.length; i++) data[i] = (2 * rng.next() - 1) * bound;
    }
    out.set(name, { shape, data });
  }
  return out;
}

/** adapter_config.json as PEFT writes it (the fields PEFT and vLLM read, with PEFT's defaults). */
export function peftAdapterConfig(baseModel: string, spec: LoraSpec): Record<string, unknown> {
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: baseModel,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layers_pattern: null,
    layers_to_transform: null,
    lora_alpha: spec.alpha,
    lora_dropout: 0.0,
    modules_to_save: null,
    peft_type: 'LORA',
    r: spec.r,
    rank_pattern: {},
    revision: null,
    target_modules: LORA_TARGETS.filter((t) => spec.targetModules.includes(t)),
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: false,
  };
}

export async function writePeftAdapter(dir: string, adapter: PeftAdapter): Promise<void> {
  validateLoraSpec(adapter.spec);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new Error(`${dir}: adapter directory does not exist`);
  const tensors: Record<string, TensorToWrite> = {};
  for (const [name, t] of adapter.tensors) {
    if (t.shape.reduce((a, b) => a * b, 1) !== t.data.length) throw new Error(`${name}: shape [${t.shape}] does not match ${t.data.length} values`);
    tensors[name] = { shape: t.shape, data: t.data };
  }
  // Weights first, config last: a directory with a config is a complete adapter.
  writeSafetensors(path.join(dir, ADAPTER_WEIGHTS_FILE), tensors, { format: 'pt' });
  await fs.promises.writeFile(
    path.join(dir, ADAPTER_CONFIG_FILE),
    JSON.stringify(peftAdapterConfig(adapter.baseModel, adapter.spec), null, 2) + '\n',
  );
}

/**
 * Reads an adapter directory. With `config`, every tensor's name and shape is checked against
 * the base model, and a missing one is an error; without, names and the A/B pairing are checked.
 * Errors name the file and, when one is at fault, the tensor.
 */
export async function readPeftAdapter(dir: string, config?: ModelConfig): Promise<PeftAdapter> {
  const configFile = path.join(dir, ADAPTER_CONFIG_FILE);
  const weightsFile = path.join(dir, ADAPTER_WEIGHTS_FILE);
  const raw = await readJsonFile(configFile);
  const fail = (message: string): never => {
    throw new ModelLoadError(message, configFile);
  };
  if (raw['peft_type'] !== 'LORA') fail(`peft_type must be "LORA", got ${JSON.stringify(raw['peft_type'])}`);
  if (raw['task_type'] !== undefined && raw['task_type'] !== null && raw['task_type'] !== 'CAUSAL_LM') {
    fail(`task_type must be "CAUSAL_LM", got ${JSON.stringify(raw['task_type'])}`);
  }
  // Variants that change the arithmetic: refuse them rather than apply the adapter wrongly.
  if (raw['use_dora']) fail('use_dora is not supported');
  if (raw['use_rslora']) fail('use_rslora is not supported');
  if (raw['fan_in_fan_out']) fail('fan_in_fan_out is not supported');
  if (raw['bias'] !== undefined && raw['bias'] !== 'none') fail(`bias "${raw['bias']}" is not supported (only "none")`);
  for (const key of ['rank_pattern', 'alpha_pattern']) {
    const v = raw[key];
    if (v && typeof v === 'object' && Object.keys(v).length > 0) fail(`${key} is not supported`);
  }
  if (raw['modules_to_save']) fail('modules_to_save is not supported');
  const targets = raw['target_modules'];
  if (!Array.isArray(targets)) fail('target_modules must be a list of module names');
  const spec: LoraSpec = { r: Number(raw['r']), alpha: Number(raw['lora_alpha']), targetModules: targets as LoraTarget[] };
  try {
    validateLoraSpec(spec);
  } catch (err) {
    fail((err as Error).message);
  }
  const baseModel = typeof raw['base_model_name_or_path'] === 'string' ? raw['base_model_name_or_path'] : '';

  const file = SafetensorsFile.open(weightsFile);
  const tensors: AdapterTensors = new Map();
  try {
    const pattern = /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])\.weight$/;
    const expected = config ? loraTensorShapes(config, spec) : null;
    for (const name of file.tensors.keys()) {
      const m = pattern.exec(name);
      if (!m) throw new ModelLoadError('not a LoRA tensor name of a supported target', weightsFile, name);
      const target = m[3] as LoraTarget;
      if (!spec.targetModules.includes(target) || loraModule(target) !== m[2]) {
        throw new ModelLoadError(`module ${m[2]}.${m[3]} is not in target_modules [${spec.targetModules}]`, weightsFile, name);
      }
      const t = file.read(name);
      const [rows, cols] = t.shape;
      if (t.shape.length !== 2 || (m[4] === 'A' ? rows : cols) !== spec.r) {
        throw new ModelLoadError(`shape [${t.shape}] does not have rank r = ${spec.r}`, weightsFile, name);
      }
      if (expected) {
        const want = expected.get(name);
        if (!want) throw new ModelLoadError(`layer ${m[1]} does not exist in the base model (${config?.numLayers} layers)`, weightsFile, name);
        if (want[0] !== rows || want[1] !== cols) throw new ModelLoadError(`shape [${t.shape}] does not match the base model's [${want}]`, weightsFile, name);
      }
      tensors.set(name, { shape: t.shape, data: t.data });
    }
  } finally {
    file.close();
  }
  for (const name of tensors.keys()) {
    const pair = name.endsWith('lora_A.weight') ? name.replace(/lora_A\.weight$/, 'lora_B.weight') : name.replace(/lora_B\.weight$/, 'lora_A.weight');
    if (!tensors.has(pair)) throw new ModelLoadError(`has no matching ${pair.slice(-13)}`, weightsFile, name);
  }
  if (config) {
    for (const name of loraTensorShapes(config, spec).keys()) {
      if (!tensors.has(name)) throw new ModelLoadError('tensor missing from adapter', weightsFile, name);
    }
  }
  return { baseModel, spec, tensors };
}

/** The ModelConfig of a base model directory (its config.json). */
export async function readModelConfig(modelDir: string): Promise<ModelConfig> {
  const file = path.join(modelDir, 'config.json');
  return parseModelConfig(await readJsonFile(file), file);
}

async function readJsonFile(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch {
    throw new ModelLoadError('missing file', file);
  }
  try {
    const value = JSON.parse(text);
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('not a JSON object');
    return value as Record<string, unknown>;
  } catch (err) {
    throw new ModelLoadError(`invalid JSON: ${(err as Error).message}`, file);
  }
}
