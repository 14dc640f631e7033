import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { parseModelConfig, toHfConfig } from '../src/config';
import { DecodeBatch } from '../src/decode-batch';
import { WebGpuDecodeStep } from '../src/kernels/decode-step.webgpu';
import { LoadedModel, loadModel } from '../src/loader';
import { DEFAULT_LORA_SPEC, LoraSpec, initLoraWeights, readPeftAdapter, writePeftAdapter } from '../src/lora/peft';
import { PRESETS } from '../src/maker/make-model';
import { byteTokens } from '../src/maker/tokenizer-files';
import { checkpointedGradients, nextTokenRows } from '../src/training/checkpointing';
import { buildSftSequence } from '../src/training/sequences';
import { LoraTrainer } from '../src/training/trainer';
import { gemma3ReferenceForward } from './gemma3-reference';
import { decodeTokens, engineGreedy, largestGradientAgainstDifference, makeTiny, maxAbsDiff, referenceGreedy, rowsOf, tempDir, useBackend, webgpuUnavailable } from './helpers';
import { logSoftmax } from './qwen3-reference';

/** google/gemma-3-270m's config.json as published. */
const GEMMA3_270M_CONFIG = {
  _sliding_window_pattern: 6,
  architectures: ['Gemma3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  attn_logit_softcapping: null,
  bos_token_id: 2,
  eos_token_id: 1,
  final_logit_softcapping: null,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  hidden_size: 640,
  initializer_range: 0.02,
  intermediate_size: 2048,
  layer_types: Array.from({ length: 18 }, (_, i) => ((i + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention')),
  max_position_embeddings: 32768,
  model_type: 'gemma3_text',
  num_attention_heads: 4,
  num_hidden_layers: 18,
  num_key_value_heads: 1,
  pad_token_id: 0,
  query_pre_attn_scalar: 256,
  rms_norm_eps: 1e-6,
  rope_local_base_freq: 10000.0,
  rope_scaling: null,
  rope_theta: 1000000.0,
  sliding_window: 512,
  torch_dtype: 'bfloat16',
  transformers_version: '4.55.0.dev0',
  use_bidirectional_attention: false,
  use_cache: true,
  vocab_size: 262144,
};

/** google/gemma-3-1b-it's config.json: written before layer_types, with sliding_window_pattern instead. */
const GEMMA3_1B_IT_CONFIG = {
  architectures: ['Gemma3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  attn_logit_softcapping: null,
  bos_token_id: 2,
  cache_implementation: 'hybrid',
  eos_token_id: [1, 106],
  final_logit_softcapping: null,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  hidden_size: 1152,
  initializer_range: 0.02,
  intermediate_size: 6912,
  max_position_embeddings: 32768,
  model_type: 'gemma3_text',
  num_attention_heads: 4,
  num_hidden_layers: 26,
  num_key_value_heads: 1,
  pad_token_id: 0,
  query_pre_attn_scalar: 256,
  rms_norm_eps: 1e-6,
  rope_local_base_freq: 10000,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: 512,
  sliding_window_pattern: 6,
  torch_dtype: 'bfloat16',
  transformers_version: '4.50.0.dev0',
  use_cache: true,
  vocab_size: 262144,
};

/** meta-llama/Llama-3.2-1B's config.json as published. */
const LLAMA_3_2_1B_CONFIG = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: 128001,
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: { factor: 32.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: 'llama3' },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.45.0.dev0',
  use_cache: true,
  vocab_size: 128256,
};

/** 18 tokens: past tiny-gemma3's 8-position window, so that its windowed layers drop keys a full layer keeps. */
const PROMPT = [2, 17, 300, 42, 99, 7, 401, 5, 260, 33, 87, 120, 64, 311, 9, 450, 12, 270];
const GENERATED = 12;

/** Config keys that name a checkpoint's tokens, dtype and writer rather than its shape. */
const shapeOf = (c: Record<string, unknown>, extra: string[] = []) =>
  Object.fromEntries(Object.entries(c).filter(([k]) => !['bos_token_id', 'eos_token_id', 'pad_token_id', 'torch_dtype', 'transformers_version', ...extra].includes(k)));

describe('Gemma 3 and Llama 3.2 configs', () => {
  it('reads Gemma 3 270M: Gemma norms, GeGLU, q/k norms, scaled embeddings, every sixth layer global', () => {
    const config = parseModelConfig(GEMMA3_270M_CONFIG);
    expect(config).toMatchObject({
      modelType: 'gemma3_text',
      hiddenSize: 640,
      numHeads: 4,
      numKvHeads: 1,
      headDim: 256,
      hiddenAct: 'gelu_pytorch_tanh',
      qkNorm: true,
      normUnitOffset: true,
      sandwichNorms: true,
      scaleEmbeddings: true,
      queryPreAttnScalar: 256,
      ropeTheta: 1000000,
      ropeScaling: null,
      tieWordEmbeddings: true,
      qkvBias: false,
      oBias: false,
      eosTokenIds: [1],
    });
    expect(config.slidingWindow?.size).toBe(512);
    expect(config.slidingWindow?.ropeTheta).toBe(10000);
    expect(config.slidingWindow?.layers.flatMap((sliding, i) => (sliding ? [] : [i]))).toEqual([5, 11, 17]);
    // The maker's real-shape preset writes the same architecture keys back.
    expect(shapeOf(toHfConfig(PRESETS['gemma3-270m']))).toEqual(shapeOf(GEMMA3_270M_CONFIG, ['_sliding_window_pattern']));
  });

  it("reads Gemma 3 1B's sliding_window_pattern as every sixth layer global, and its two end ids", () => {
    const config = parseModelConfig(GEMMA3_1B_IT_CONFIG);
    expect(config.slidingWindow?.layers.flatMap((sliding, i) => (sliding ? [] : [i]))).toEqual([5, 11, 17, 23]);
    expect(config).toMatchObject({ hiddenSize: 1152, numLayers: 26, eosTokenIds: [1, 106] });
  });

  it("reads newer transformers' rope_parameters as the keys they replace, and the larger models' linear scaling", () => {
    const { rope_theta, rope_local_base_freq, rope_scaling, ...rest } = GEMMA3_270M_CONFIG;
    const scaling = { rope_type: 'linear', factor: 8.0 };
    const old = parseModelConfig({ ...GEMMA3_270M_CONFIG, rope_scaling: scaling });
    const newer = parseModelConfig({
      ...rest,
      rope_parameters: { full_attention: { rope_type: 'linear', factor: 8.0, rope_theta }, sliding_attention: { rope_type: 'default', rope_theta: rope_local_base_freq } },
    });
    expect(old.ropeScaling).toEqual({ type: 'linear', factor: 8 });
    expect(newer).toEqual(old);
    expect(rope_scaling).toBeNull();
  });

  it('refuses what it does not compute: logit soft-capping, bidirectional attention', () => {
    expect(() => parseModelConfig({ ...GEMMA3_270M_CONFIG, final_logit_softcapping: 30.0 })).toThrow(/final_logit_softcapping/);
    expect(() => parseModelConfig({ ...GEMMA3_270M_CONFIG, attn_logit_softcapping: 50.0 })).toThrow(/attn_logit_softcapping/);
    expect(() => parseModelConfig({ ...GEMMA3_270M_CONFIG, use_bidirectional_attention: true })).toThrow(/use_bidirectional_attention/);
    // The multimodal checkpoints (4B and up) are another architecture.
    expect(() => parseModelConfig({ architectures: ['Gemma3ForConditionalGeneration'], model_type: 'gemma3' })).toThrow(/unsupported architecture \["Gemma3ForConditionalGeneration"\]/);
  });

  it("reads Llama 3.2 1B: llama3 RoPE rescaling, tied embeddings; the preset writes its keys back", () => {
    const config = parseModelConfig(LLAMA_3_2_1B_CONFIG);
    expect(config).toMatchObject({ modelType: 'llama', headDim: 64, ropeTheta: 500000, tieWordEmbeddings: true, slidingWindow: null, hiddenAct: 'silu', normUnitOffset: false });
    expect(config.ropeScaling).toEqual({ type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
    expect(shapeOf(toHfConfig(PRESETS['llama3.2-1b']))).toEqual(shapeOf(LLAMA_3_2_1B_CONFIG, ['pretraining_tp']));
  });
});

describe('Gemma 3 on the fused decoding paths', () => {
  it('is computed by the webgpu decoding step (its norms, GeGLU and sliding window), not by the wasm one-call block, which computes the Llama block', async () => {
    await useBackend('cpu');
    const lm = await loadModel(makeTiny('gemma3-paths', { preset: 'tiny-gemma3' }));
    expect(WebGpuDecodeStep.fits(lm.model)).toBe(true);
    expect(lm.model.blocks.map((b) => b.isLlamaBlock)).toEqual([false, false, false]);
    expect(lm.model.blocks.map((b) => b.attention.windowed)).toEqual([true, true, false]);
    lm.dispose();
  });
});

describe('a Gemma-style byte-fallback tokenizer', () => {
  it('loads, and round-trips text with characters outside its vocabulary through their byte tokens', async () => {
    await useBackend('cpu');
    const lm = await loadModel(makeTiny('gemma3-tokenizer', { preset: 'tiny-gemma3' }));
    const json = JSON.parse(fs.readFileSync(path.join(lm.dir, 'tokenizer.json'), 'utf8'));
    expect(json.model).toMatchObject({ type: 'BPE', byte_fallback: true, unk_token: '<unk>' });
    const text = 'The train left at seven: 9€ for a ticket 🙂 ¿sí?';
    for (const ch of ['€', '🙂']) expect(lm.tokenizer.tokenToId(ch)).toBeUndefined();
    const ids = lm.tokenizer.encode(text);
    const bytes = new Set(byteTokens().map((t) => lm.tokenizer.tokenToId(t)));
    // € is three bytes, the emoji four: each a <0xNN> token.
    expect(ids.filter((id) => bytes.has(id)).length).toBeGreaterThanOrEqual(7);
    expect(ids.map((id) => lm.tokenizer.idToToken(id))).toContain('<0xE2>');
    expect(lm.tokenizer.decode(ids)).toBe(text);
    // Spaces become U+2581 inside tokens and come back as spaces.
    expect(ids.map((id) => lm.tokenizer.idToToken(id)).some((t) => t?.startsWith('\u2581'))).toBe(true);
    // Encoding as a sequence adds <bos>, as Gemma's post-processor does.
    expect(lm.tokenizer.encode('hello', { addSpecialTokens: true })[0]).toBe(lm.tokenizer.tokenToId('<bos>'));
    lm.dispose();
  });
});

describe.each(['cpu', 'wasm'] as const)('Gemma 3 on %s against an independent reference', (backend) => {
  let dir: string;
  let lm: LoadedModel;

  beforeAll(async () => {
    await useBackend(backend);
    // bf16 weights as Gemma ships (the embedding scale then rounds to bf16: sqrt(80) = 8.944 to
    // 8.9375); a seed whose greedy continuation varies, its top two logits at least 0.04 apart
    // at every step.
    dir = makeTiny('gemma3', { preset: 'tiny-gemma3', initStd: 0.5, seed: 6, dtype: 'BF16' });
    lm = await loadModel(dir);
  });
  afterAll(() => lm.dispose());

  it("gives the reference's logprobs over a prompt past the window, and decodes its greedy tokens with their logprobs", () => {
    const engine = engineGreedy(lm, PROMPT, GENERATED);
    // The reference: every position recomputed from scratch, greedy on its own logits.
    const ref = referenceGreedy((tokens) => gemma3ReferenceForward(dir, tokens), PROMPT, GENERATED);
    engine.promptRows.forEach((row, t) => expect(maxAbsDiff(logSoftmax(row), logSoftmax(ref.promptRows[t]))).toBeLessThan(1e-4));
    expect(engine.tokens).toEqual(ref.tokens);
    expect(maxAbsDiff(engine.logprobs, ref.logprobs)).toBeLessThan(1e-4);
    // Not a degenerate model: the greedy tokens vary.
    expect(new Set(engine.tokens).size).toBeGreaterThan(2);
  });

  it('decodes the same greedy tokens in a batch whose rows have other lengths (padding columns inside the window)', async () => {
    const other = [2, 40, 41, 42, 43];
    const greedy = { temperature: 0, maxTokens: GENERATED, ignoreEos: true, logprobs: true };
    const [together, alone] = [await decodeTokens(lm, [other, PROMPT], [greedy, greedy], 'sampled'), await decodeTokens(lm, [PROMPT], [greedy], 'sampled')];
    expect(together[1].map((t) => t.id)).toEqual(alone[0].map((t) => t.id));
    expect(maxAbsDiff(together[1].map((t) => t.logprob), alone[0].map((t) => t.logprob))).toBeLessThan(1e-4);
  });

  it('attends within the window: the same weights with every layer global give other logprobs past it', async () => {
    const global = tempDir('gemma3-global');
    for (const f of fs.readdirSync(dir)) fs.copyFileSync(path.join(dir, f), path.join(global, f));
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    fs.writeFileSync(path.join(global, 'config.json'), JSON.stringify({ ...config, sliding_window: 4096 }));
    const wide = await loadModel(global);
    const rows = (model: LoadedModel) => {
      const logits = model.model.forward([PROMPT]);
      const out = rowsOf(logits);
      logits.dispose();
      return out;
    };
    const [windowed, unwindowed] = [rows(lm), rows(wide)];
    wide.dispose();
    // Within the window both see every token; past it they differ.
    expect(maxAbsDiff(logSoftmax(windowed[7]), logSoftmax(unwindowed[7]))).toBeLessThan(1e-5);
    expect(maxAbsDiff(logSoftmax(windowed[PROMPT.length - 1]), logSoftmax(unwindowed[PROMPT.length - 1]))).toBeGreaterThan(1e-2);
  });

  it('trains LoRA: taped gradients match the checkpointed pass (norms after the MLP included) and finite differences', async () => {
    const spec: LoraSpec = { r: 2, alpha: 4, targetModules: DEFAULT_LORA_SPEC.targetModules };
    const init = initLoraWeights(lm.config, spec, 5);
    for (const [name, t] of init) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.05 * Math.cos(5 * i + name.length)));
    const trainer = new LoraTrainer(lm, spec, init);
    try {
      const rows = [PROMPT, [2, 5, 6, 7, 8, 9, 10, 11]];
      const T = PROMPT.length - 1;
      const weights = tf.tensor2d(Array.from({ length: 2 * T }, (_, i) => (i % T < 14 ? 0.5 + 0.5 * Math.sin(i) : 0)), [2, T]);
      const lossOf = (lp: tf.Tensor2D) => tf.neg(tf.sum(tf.mul(lp, weights))) as tf.Scalar;
      const vars = trainer.attachment.variables();
      const taped = tf.variableGrads(() => tf.tidy(() => lossOf(trainer.forward(rows, 256, false).logprobs)), vars);
      const lossValue = taped.value.dataSync()[0];
      const checkpointed = await checkpointedGradients(lm.model, nextTokenRows(rows), trainer.attachment.variablesByLayer(), lossOf, { chunk: 256, withEntropy: false });
      expect(Math.abs(checkpointed.value - lossValue)).toBeLessThan(1e-4 * Math.abs(lossValue));
      for (const v of vars) {
        const g = taped.grads[v.name].dataSync();
        const scale = Math.max(...Array.from(g, Math.abs));
        expect(scale).toBeGreaterThan(0);
        expect(maxAbsDiff((checkpointed.grads.get(v.name) as tf.Tensor).dataSync(), g)).toBeLessThan(1e-3 * scale + 1e-6);
      }
      // down_proj reaches the loss through post_feedforward_layernorm, q and k through q_norm and k_norm.
      for (const target of ['down_proj', 'q_proj', 'k_proj']) {
        const loss = () => tf.tidy(() => lossOf(trainer.forward(rows, 256, false).logprobs).dataSync()[0]);
        const { analytic, numeric } = largestGradientAgainstDifference(trainer.attachment.layers, target, (name) => taped.grads[name], loss);
        expect(Math.abs(analytic)).toBeGreaterThan(1e-3);
        expect(Math.abs(numeric - analytic)).toBeLessThan(0.05 * Math.abs(analytic));
      }
      taped.value.dispose();
      Object.values(taped.grads).forEach((t) => t.dispose());
      checkpointed.grads.forEach((t) => t.dispose());
      weights.dispose();
    } finally {
      trainer.dispose();
    }
  });
});

// On lavapipe where there is no GPU; in CI a missing adapter fails these tests.
const webgpuMissing = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (webgpuMissing && !inCi) console.warn(`Gemma 3 webgpu tests skipped: ${webgpuMissing}`);

(webgpuMissing && !inCi ? describe.skip : describe)('Gemma 3 on webgpu', () => {
  const dir = makeTiny('gemma3-webgpu', { preset: 'tiny-gemma3', initStd: 0.5, seed: 6, dtype: 'BF16' });

  it("decodes past the window with the reference's logprobs by the encoded step, on its bf16 weights held in 16 bits", async () => {
    await useBackend('webgpu');
    const lm = await loadModel(dir, { inferenceOnly: true });
    const batch = new DecodeBatch<number>(lm.model);
    try {
      expect(WebGpuDecodeStep.fits(lm.model)).toBe(true);
      expect(lm.model.blocks[0].attention.qkv.halfWeight?.dtype).toBe('BF16');
      // A prompt of several tokens (RoPE apart from attention), then one token a step (in attention).
      const rows = [await batch.join(0, PROMPT.slice(0, 4))];
      for (const token of PROMPT.slice(4)) rows.push((await batch.step(new Map([[0, token]]))).get(0) as Float32Array);
      const ref = gemma3ReferenceForward(dir, PROMPT);
      rows.forEach((row, i) => expect(maxAbsDiff(logSoftmax(row), logSoftmax(ref[i + 3]))).toBeLessThan(1e-4));
    } finally {
      batch.dispose();
      lm.dispose();
    }
  });

  it("decodes from the KV cache past the window with the reference's logprobs, by its kernels and ops", async () => {
    await useBackend('webgpu');
    const lm = await loadModel(dir);
    try {
      // webgpu reads back asynchronously only.
      const read = async (logits: tf.Tensor2D) => {
        const data = (await logits.data()) as Float32Array;
        logits.dispose();
        return Array.from({ length: logits.shape[0] }, (_, r) => data.slice(r * logits.shape[1], (r + 1) * logits.shape[1]));
      };
      const cache = lm.model.newCache();
      cache.addEmptyRow();
      const rows = await read(lm.model.forward([PROMPT.slice(0, 4)], { cache }));
      for (const token of PROMPT.slice(4)) rows.push(...(await read(lm.model.forward([[token]], { cache }))));
      cache.dispose();
      const ref = gemma3ReferenceForward(dir, PROMPT);
      rows.forEach((row, t) => expect(maxAbsDiff(logSoftmax(row), logSoftmax(ref[t]))).toBeLessThan(1e-4));
    } finally {
      lm.dispose();
    }
  });
});

describe('LoRA SFT on Gemma 3 (wasm)', () => {
  it('runs a step on a chat through its template and writes a PEFT adapter with its module names', async () => {
    await useBackend('wasm');
    const lm = await loadModel(makeTiny('gemma3-sft', { preset: 'tiny-gemma3', initStd: 0.3 }));
    const trainer = new LoraTrainer(lm, { r: 4, alpha: 8, targetModules: DEFAULT_LORA_SPEC.targetModules });
    try {
      const conversation = { messages: [{ role: 'system' as const, content: 'be brief' }, { role: 'user' as const, content: 'colour of the sky?' }, { role: 'assistant' as const, content: 'blue' }] };
      const sequence = buildSftSequence(lm, conversation);
      const trained = lm.tokenizer.decode(sequence.tokens.filter((_, i) => sequence.mask[i] === 1), { skipSpecialTokens: false });
      expect(trained).toBe('blue<end_of_turn>\n');
      expect(lm.tokenizer.decode(sequence.tokens, { skipSpecialTokens: false })).toMatch(/^<bos><start_of_turn>user\nbe brief\n\ncolour of the sky\?<end_of_turn>\n<start_of_turn>model\n/);
      const before = await trainer.sftLoss([conversation]);
      for (let i = 0; i < 3; i++) await trainer.sftStepOnTokens([sequence], 1e-2);
      expect(await trainer.sftLoss([conversation])).toBeLessThan(before);

      const out = tempDir('gemma3-adapter');
      await writePeftAdapter(out, { baseModel: 'google/gemma-3-270m', spec: trainer.spec, tensors: await trainer.exportAdapter() });
      const adapterConfig = JSON.parse(fs.readFileSync(path.join(out, 'adapter_config.json'), 'utf8'));
      expect(adapterConfig.target_modules).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
      const adapter = await readPeftAdapter(out, lm.config);
      expect([...adapter.tensors.keys()]).toContain('base_model.model.model.layers.2.mlp.down_proj.lora_B.weight');
    } finally {
      trainer.dispose();
      lm.dispose();
    }
  });
});
