import type { Page, TrainingEventRecord } from '@trainyard/contracts';
import OpenAI from 'openai';
import { waitForJobEnd } from './support/faults';
import { Stack } from './support/stack';

// Workers on webgpu (COMPUTE_BACKEND=webgpu: on Mesa's lavapipe here, which naming the backend
// takes) do what workers on wasm do. The inference worker serves chat completions through the
// engine's encoded decoding step: the same greedy tokens, drawn on the GPU or chosen from
// read-back logits, with the same logprobs. The training worker runs an ART RL job through the
// engine's WGSL training kernels: the same losses step by step, and a checkpoint that answers
// as the wasm worker's does. Both stacks serve the tiny model the maker writes from the same seed,
// stored in bf16 as Hugging Face checkpoints ship: the wasm workers multiply it from bf16 (and,
// training, f32) panels, the webgpu workers hold it in its 16 bits on the GPU.

interface Run {
  plain: string;
  streamed: string;
  withLogprobs: OpenAI.Chat.ChatCompletion;
  /** Each gradient step's loss and gradient norm, in order. */
  steps: { loss: number; gradNorm: number }[];
  /** The base model's and the trained step's greedy answers to one prompt, with logprobs. */
  before: OpenAI.Chat.ChatCompletion;
  trained: OpenAI.Chat.ChatCompletion;
  /** The compute backend each worker said it runs on. */
  backends: { inference: string | undefined; training: string | undefined };
}

async function run(backend: 'wasm' | 'webgpu'): Promise<Run> {
  // At log level the workers say which backend they run on.
  const env: Record<string, string> = { COMPUTE_BACKEND: backend, LOG_LEVEL: 'log' };
  if (process.env['XDG_RUNTIME_DIR']) env['XDG_RUNTIME_DIR'] = process.env['XDG_RUNTIME_DIR'];
  const stack = await Stack.start({ env });
  try {
    const base = stack.addTinyModel('trainyard/tiny-chat', 1, {}, 'BF16');
    const key = (await stack.createKey('acme')).key;
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    const request = { model: base, messages: [{ role: 'user' as const, content: 'Say something.' }], max_tokens: 24, temperature: 0 };
    const plain = await client.chat.completions.create(request);
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) streamed += chunk.choices[0]?.delta?.content ?? '';
    const withLogprobs = await client.chat.completions.create({ ...request, logprobs: true, top_logprobs: 2 });

    // ART's RL loop once: greedy rollouts of the trainable model (the same tokens on both
    // backends), rewards by position in the group, one RL job, the new step answering.
    const model = await stack.json<{ id: string; entity: string; project: string; name: string }>('POST', '/v1/preview/models', key, {
      entity: null,
      project: 'gpu',
      name: 'agent',
      base_model: base,
      return_existing: true,
    });
    const name = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
    const groups = [];
    for (const prompt of ['Count to three.', 'Name a colour.']) {
      const messages = [{ role: 'user' as const, content: prompt }];
      const trajectories = [];
      for (let i = 0; i < 3; i++) {
        // @ts-expect-error ART's extension, sent as an extra body field
        const completion = await client.chat.completions.create({ model: `${name}:step0`, messages, max_tokens: 8, temperature: 0, logprobs: true, return_token_ids: true });
        trajectories.push({ messages_and_choices: [...messages, completion.choices[0]], reward: i });
      }
      groups.push({ trajectories });
    }
    const job = await stack.json<{ id: string }>('POST', '/v1/preview/training-jobs', key, { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 1e-2 } });
    const ended = await waitForJobEnd(stack, key, job.id);
    expect([ended.status, ended.error_message]).toEqual(['succeeded', null]);
    const events = await stack.json<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${job.id}/events?limit=100`, key);
    const steps = events.data.filter((e) => e.type === 'gradient_step').map((e) => ({ loss: e.data['loss'] as number, gradNorm: e.data['grad_norm'] as number }));
    const answer = (step: number) => client.chat.completions.create({ model: `${name}:step${step}`, messages: [{ role: 'user', content: 'Name a colour.' }], max_tokens: 12, temperature: 0, logprobs: true });
    const said = (app: 'inference-worker' | 'training-worker') => /compute backend: (\w+)/.exec(stack.readLog(app))?.[1];
    const backends = { inference: said('inference-worker'), training: said('training-worker') };
    return { plain: plain.choices[0].message.content ?? '', streamed, withLogprobs, steps, before: await answer(0), trained: await answer(1), backends };
  } finally {
    await stack.stop();
  }
}

const tokensOf = (c: OpenAI.Chat.ChatCompletion) => c.choices[0].logprobs?.content ?? [];

describe('workers on webgpu', () => {
  let wasm: Run;
  let webgpu: Run;

  beforeAll(async () => {
    wasm = await run('wasm');
    webgpu = await run('webgpu');
  }, 480_000);

  it('run on the backend they are given', () => {
    expect(wasm.backends).toEqual({ inference: 'wasm', training: 'wasm' });
    expect(webgpu.backends).toEqual({ inference: 'webgpu', training: 'webgpu' });
  });

  it('an inference worker answers with the tokens and logprobs a worker on wasm gives', () => {
    expect(wasm.plain.length).toBeGreaterThan(0);
    expect(webgpu.plain).toBe(wasm.plain);
    expect(webgpu.streamed).toBe(wasm.plain);
    expect(tokensOf(webgpu.withLogprobs).map((t) => t.token)).toEqual(tokensOf(wasm.withLogprobs).map((t) => t.token));
    expect(tokensOf(wasm.withLogprobs).length).toBeGreaterThan(0);
    tokensOf(wasm.withLogprobs).forEach((t, i) => {
      expect(Math.abs(tokensOf(webgpu.withLogprobs)[i].logprob - t.logprob)).toBeLessThan(1e-4);
      expect(tokensOf(webgpu.withLogprobs)[i].top_logprobs.map((top) => top.token)).toEqual(t.top_logprobs.map((top) => top.token));
    });
  });

  it('a training worker runs an ART RL job to the losses and gradient norms a worker on wasm reports, and its step is served', () => {
    const close = (a: number, b: number) => Math.abs(a - b) <= 1e-3 * Math.max(Math.abs(a), Math.abs(b)) + 1e-6;
    expect(wasm.steps.length).toBeGreaterThan(0);
    expect(webgpu.steps).toHaveLength(wasm.steps.length);
    wasm.steps.forEach((step, i) => {
      expect([i, 'loss', close(webgpu.steps[i].loss, step.loss)]).toEqual([i, 'loss', true]);
      expect(step.gradNorm).toBeGreaterThan(0);
      expect([i, 'grad_norm', close(webgpu.steps[i].gradNorm, step.gradNorm)]).toEqual([i, 'grad_norm', true]);
    });
    // The trained steps are not compared token by token: Adam's first step moves every weight
    // by about the learning rate whatever its gradient's size, so float-level differences in
    // gradients near zero become differences of a whole step. Each moved its weights.
    for (const run of [wasm, webgpu]) {
      expect(tokensOf(run.trained).length).toBeGreaterThan(0);
      expect(tokensOf(run.trained).map((t) => t.logprob)).not.toEqual(tokensOf(run.before).map((t) => t.logprob));
    }
  });
});
