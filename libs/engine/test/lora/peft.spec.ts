import * as fs from 'node:fs';
import * as path from 'node:path';
import { ModelConfig } from '../../src/config';
import { ModelLoadError } from '../../src/errors';
import {
  DEFAULT_LORA_SPEC,
  initLoraWeights,
  loraTensorName,
  readModelConfig,
  readPeftAdapter,
  writePeftAdapter,
} from '../../src/lora/peft';
import { PRESETS } from '../../src/maker/make-model';
import { writeSafetensors } from '../../src/safetensors';
import { makeTiny, tempDir } from '../helpers';

const QWEN: ModelConfig = {
  ...PRESETS.tiny,
  modelType: 'qwen2',
  qkvBias: true,
  numLayers: 3,
  hiddenSize: 48,
  numHeads: 6,
  numKvHeads: 2,
  headDim: 8,
  intermediateSize: 96,
};

describe('PEFT LoRA adapters', () => {
  it('defaults to r 8, alpha 16 on all seven projections', () => {
    expect(DEFAULT_LORA_SPEC).toEqual({
      r: 8,
      alpha: 16,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    });
  });

  it.each([
    ['llama (tiny preset)', PRESETS.tiny],
    ['qwen2 (GQA 6/2, head_dim 8)', QWEN],
  ])('names and shapes every tensor as PEFT does: %s', (_, config) => {
    const { hiddenSize: C, intermediateSize: I, numHeads: H, numKvHeads: KV, headDim: D } = config;
    const tensors = initLoraWeights(config, DEFAULT_LORA_SPEC, 1);
    expect(tensors.size).toBe(config.numLayers * 7 * 2);
    const shape = (layer: number, module: string, proj: string, m: 'A' | 'B') =>
      tensors.get(`base_model.model.model.layers.${layer}.${module}.${proj}.lora_${m}.weight`)?.shape;
    const last = config.numLayers - 1;
    expect(shape(last, 'self_attn', 'q_proj', 'A')).toEqual([8, C]);
    expect(shape(last, 'self_attn', 'q_proj', 'B')).toEqual([H * D, 8]);
    expect(shape(0, 'self_attn', 'k_proj', 'B')).toEqual([KV * D, 8]);
    expect(shape(0, 'self_attn', 'v_proj', 'B')).toEqual([KV * D, 8]);
    expect(shape(0, 'self_attn', 'o_proj', 'A')).toEqual([8, H * D]);
    expect(shape(0, 'self_attn', 'o_proj', 'B')).toEqual([C, 8]);
    expect(shape(0, 'mlp', 'gate_proj', 'B')).toEqual([I, 8]);
    expect(shape(0, 'mlp', 'up_proj', 'A')).toEqual([8, C]);
    expect(shape(0, 'mlp', 'down_proj', 'A')).toEqual([8, I]);
    expect(shape(0, 'mlp', 'down_proj', 'B')).toEqual([C, 8]);
  });

  it('initialises A kaiming-uniform within 1/sqrt(in), B at zero, reproducibly by seed', () => {
    const a = initLoraWeights(PRESETS.tiny, DEFAULT_LORA_SPEC, 3);
    const b = initLoraWeights(PRESETS.tiny, DEFAULT_LORA_SPEC, 3);
    const c = initLoraWeights(PRESETS.tiny, DEFAULT_LORA_SPEC, 4);
    const nameA = loraTensorName(1, 'down_proj', 'A');
    const A = a.get(nameA)!.data;
    const bound = 1 / Math.sqrt(PRESETS.tiny.intermediateSize);
    expect(Math.max(...A.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...A.map(Math.abs))).toBeGreaterThan(0.9 * bound);
    expect(a.get(loraTensorName(1, 'down_proj', 'B'))!.data.every((v) => v === 0)).toBe(true);
    expect(b.get(nameA)!.data).toEqual(A);
    expect(c.get(nameA)!.data).not.toEqual(A);
  });

  it('only the targeted modules get tensors', () => {
    const t = initLoraWeights(PRESETS.tiny, { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] }, 0);
    expect([...t.keys()].filter((n) => n.includes('layers.0.'))).toEqual([
      loraTensorName(0, 'q_proj', 'A'),
      loraTensorName(0, 'q_proj', 'B'),
      loraTensorName(0, 'v_proj', 'A'),
      loraTensorName(0, 'v_proj', 'B'),
    ]);
  });

  it.each([
    ['llama', PRESETS.tiny],
    ['qwen2', QWEN],
  ])('round-trips through adapter_config.json and adapter_model.safetensors: %s', async (_, config) => {
    const dir = tempDir('peft');
    const spec = { r: 4, alpha: 32, targetModules: DEFAULT_LORA_SPEC.targetModules };
    const tensors = initLoraWeights(config, spec, 5);
    // Non-zero B so the round trip is not trivially zeros.
    for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = Math.sin(i + name.length)));
    await writePeftAdapter(dir, { baseModel: 'org/base', spec, tensors });

    const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'adapter_config.json'), 'utf8'));
    expect(cfg).toMatchObject({ peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 4, lora_alpha: 32, base_model_name_or_path: 'org/base' });
    expect(cfg.target_modules).toEqual(spec.targetModules);

    const back = await readPeftAdapter(dir, config);
    expect(back.baseModel).toBe('org/base');
    expect(back.spec).toEqual(spec);
    expect([...back.tensors.keys()].sort()).toEqual([...tensors.keys()].sort());
    for (const [name, t] of tensors) {
      expect(back.tensors.get(name)!.shape).toEqual(t.shape);
      expect(back.tensors.get(name)!.data).toEqual(t.data);
    }
  });

  it('rejects a tensor whose shape does not fit the base model, naming file and tensor', async () => {
    const dir = tempDir('peft-bad');
    const spec = { r: 2, alpha: 4, targetModules: ['q_proj' as const] };
    const tensors = initLoraWeights(PRESETS.tiny, spec, 0);
    await writePeftAdapter(dir, { baseModel: 'x', spec, tensors });
    const err = await readPeftAdapter(dir, QWEN).catch((e) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err.message).toContain('adapter_model.safetensors');
    expect(err.message).toContain('lora_');
  });

  it('rejects unknown tensor names and missing pairs, naming the tensor', async () => {
    const dir = tempDir('peft-names');
    const spec = { r: 2, alpha: 4, targetModules: ['q_proj' as const] };
    await writePeftAdapter(dir, { baseModel: 'x', spec, tensors: initLoraWeights(PRESETS.tiny, spec, 0) });
    const weights = path.join(dir, 'adapter_model.safetensors');
    writeSafetensors(weights, { 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight': { shape: [2, 64], data: new Float32Array(128) } });
    await expect(readPeftAdapter(dir)).rejects.toThrow(/q_proj\.lora_A\.weight.*no matching lora_B/);
    writeSafetensors(weights, { 'base_model.model.lm_head.lora_A.weight': { shape: [2, 64], data: new Float32Array(128) } });
    await expect(readPeftAdapter(dir)).rejects.toThrow(/lm_head\.lora_A\.weight/);
  });

  it('rejects configs it cannot apply exactly, naming adapter_config.json', async () => {
    const dir = tempDir('peft-cfg');
    const spec = { r: 2, alpha: 4, targetModules: ['q_proj' as const] };
    await writePeftAdapter(dir, { baseModel: 'x', spec, tensors: initLoraWeights(PRESETS.tiny, spec, 0) });
    const file = path.join(dir, 'adapter_config.json');
    const cfg = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.writeFileSync(file, JSON.stringify({ ...cfg, use_dora: true }));
    await expect(readPeftAdapter(dir)).rejects.toThrow(/adapter_config\.json.*use_dora/);
    fs.writeFileSync(file, JSON.stringify({ ...cfg, target_modules: ['q_proj', 'embed_tokens'] }));
    await expect(readPeftAdapter(dir)).rejects.toThrow(/embed_tokens/);
    fs.rmSync(file);
    await expect(readPeftAdapter(dir)).rejects.toThrow(/adapter_config\.json: missing file/);
  });

  it('reads a base model config.json, naming the file on errors', async () => {
    const dir = makeTiny('peft-model');
    const config = await readModelConfig(dir);
    expect(config.hiddenSize).toBe(PRESETS.tiny.hiddenSize);
    await expect(readModelConfig(tempDir('empty'))).rejects.toThrow(/config\.json: missing file/);
  });
});
