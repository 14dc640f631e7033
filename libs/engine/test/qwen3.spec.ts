import * as tf from '@tensorflow/tfjs-core';
import { parseModelConfig, toHfConfig } from '../src/config';
import { WebGpuDecodeStep } from '../src/kernels/decode-step.webgpu';
import { LoadedModel, loadModel } from '../src/loader';
import { DEFAULT_LORA_SPEC, LoraSpec, initLoraWeights } from '../src/lora/peft';
import { PRESETS } from '../src/maker/make-model';
import { checkpointedGradients, nextTokenRows } from '../src/training/checkpointing';
import { LoraTrainer } from '../src/training/trainer';
import { engineGreedy, largestGradientAgainstDifference, makeTiny, maxAbsDiff, referenceGreedy, rowsOf, useBackend } from './helpers';
import { logSoftmax, qwen3ReferenceForward } from './qwen3-reference';

/** Qwen/Qwen3-0.6B's config.json as published. */
const QWEN3_0_6B_CONFIG = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.51.0',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

const PROMPT = [1, 17, 300, 42, 99, 2, 7, 401, 5, 260];
const GENERATED = 12;

describe('Qwen3 config', () => {
  it('reads Qwen3-0.6B: head_dim from the config, q/k norms, no biases, tied embeddings', () => {
    const config = parseModelConfig(QWEN3_0_6B_CONFIG);
    expect(config).toMatchObject({ modelType: 'qwen3', hiddenSize: 1024, numHeads: 16, numKvHeads: 8, headDim: 128, qkNorm: true, qkvBias: false, oBias: false, tieWordEmbeddings: true, eosTokenIds: [151645] });
    // The maker's real-shape preset writes the same architecture keys back (its tokens are the maker's tokenizer's).
    const shapeOf = (c: Record<string, unknown>) => Object.fromEntries(Object.entries(c).filter(([k]) => !['bos_token_id', 'eos_token_id', 'torch_dtype', 'transformers_version'].includes(k)));
    expect(shapeOf(toHfConfig(PRESETS['qwen3-0.6b']))).toEqual({ ...shapeOf(QWEN3_0_6B_CONFIG), mlp_bias: false });
  });

  it('refuses sliding-window attention, which it does not compute', () => {
    expect(() => parseModelConfig({ ...QWEN3_0_6B_CONFIG, use_sliding_window: true, sliding_window: 4096 })).toThrow(/use_sliding_window/);
  });

  it("is run by the webgpu decoding step, its q_norm and k_norm in the step's RoPE programs", async () => {
    await useBackend('cpu');
    const lm = await loadModel(makeTiny('qwen3-webgpu', { preset: 'tiny-qwen3' }));
    expect(WebGpuDecodeStep.fits(lm.model)).toBe(true);
    lm.dispose();
  });
});

describe.each(['cpu', 'wasm'] as const)('Qwen3 on %s against an independent reference', (backend) => {
  let dir: string;
  let lm: LoadedModel;

  beforeAll(async () => {
    await useBackend(backend);
    // A seed whose greedy continuation is not one token repeated, its top two logits at least 0.05 apart at every step.
    dir = makeTiny('qwen3', { preset: 'tiny-qwen3', initStd: 0.5, seed: 3 });
    lm = await loadModel(dir);
  });
  afterAll(() => lm.dispose());

  it('gives the reference\'s logprobs over a prompt, and decodes the reference\'s greedy tokens with their logprobs', () => {
    const engine = engineGreedy(lm, PROMPT, GENERATED);
    // The reference: every position recomputed from scratch, greedy on its own logits.
    const ref = referenceGreedy((tokens) => qwen3ReferenceForward(dir, tokens), PROMPT, GENERATED);
    engine.promptRows.forEach((row, t) => expect(maxAbsDiff(logSoftmax(row), logSoftmax(ref.promptRows[t]))).toBeLessThan(1e-4));
    expect(engine.tokens).toEqual(ref.tokens);
    expect(maxAbsDiff(engine.logprobs, ref.logprobs)).toBeLessThan(1e-4);
    // Not a degenerate model: the greedy tokens vary, and positions' distributions differ.
    expect(new Set(engine.tokens).size).toBeGreaterThan(2);
    expect(maxAbsDiff(logSoftmax(ref.promptRows[0]), logSoftmax(ref.promptRows[5]))).toBeGreaterThan(1e-2);
  });

  it('gives the reference\'s logprobs with tied embeddings, as Qwen3-0.6B ships', async () => {
    const tiedDir = makeTiny('qwen3-tied', { preset: 'tiny-qwen3', overrides: { tieWordEmbeddings: true }, initStd: 0.2 });
    const tied = await loadModel(tiedDir);
    const logits = tied.model.forward([PROMPT]);
    const rows = rowsOf(logits);
    logits.dispose();
    tied.dispose();
    const ref = qwen3ReferenceForward(tiedDir, PROMPT);
    rows.forEach((row, t) => expect(maxAbsDiff(logSoftmax(row), logSoftmax(ref[t]))).toBeLessThan(1e-4));
  });

  it('trains LoRA through q_norm and k_norm: taped gradients match finite differences and the checkpointed pass', async () => {
    const spec: LoraSpec = { r: 2, alpha: 4, targetModules: DEFAULT_LORA_SPEC.targetModules };
    const init = initLoraWeights(lm.config, spec, 5);
    for (const [name, t] of init) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.05 * Math.cos(5 * i + name.length)));
    const trainer = new LoraTrainer(lm, spec, init);
    try {
      const rows = [PROMPT, [1, 5, 6, 7, 8, 9, 10, 11]];
      const T = PROMPT.length - 1;
      const weights = tf.tensor2d(Array.from({ length: 2 * T }, (_, i) => (i % T < 7 ? 0.5 + 0.5 * Math.sin(i) : 0)), [2, T]);
      const lossOf = (lp: tf.Tensor2D) => tf.neg(tf.sum(tf.mul(lp, weights))) as tf.Scalar;
      const vars = trainer.attachment.variables();
      // The taped forward pass gives the untaped logprobs.
      const untaped = tf.tidy(() => trainer.forward(rows, 256, false).logprobs.arraySync());
      const taped = tf.variableGrads(() => tf.tidy(() => lossOf(trainer.forward(rows, 256, false).logprobs)), vars);
      const lossValue = taped.value.dataSync()[0];
      const want = -untaped.flat().reduce((s, v, i) => s + v * (i % T < 7 ? 0.5 + 0.5 * Math.sin(i) : 0), 0);
      expect(Math.abs(lossValue - want)).toBeLessThan(1e-4 * Math.abs(want));

      const checkpointed = await checkpointedGradients(lm.model, nextTokenRows(rows), trainer.attachment.variablesByLayer(), lossOf, { chunk: 256, withEntropy: false });
      expect(Math.abs(checkpointed.value - lossValue)).toBeLessThan(1e-4 * Math.abs(lossValue));
      for (const v of vars) {
        const g = taped.grads[v.name].dataSync();
        const scale = Math.max(...Array.from(g, Math.abs));
        expect(maxAbsDiff((checkpointed.grads.get(v.name) as tf.Tensor).dataSync(), g)).toBeLessThan(1e-3 * scale + 1e-6);
      }

      // q's and k's adapters reach the loss only through q_norm and k_norm: their largest
      // gradient elements against central finite differences.
      for (const target of ['q_proj', 'k_proj']) {
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
