// Training jobs through the whole stack (gateway, NATS, orchestrator, PostgreSQL, training
// worker and inference worker), driven as OpenPipe ART drives them, on this machine.
//
//   npx tsx --tsconfig tsconfig.base.json tools/bench/training-jobs.bench.ts [--preset tiny|smollm2-135m|qwen3-0.6b|...]
//       [--backend wasm|webgpu] [--packed N] [--rollout-tokens N] [--groups N] [--group-size N] [--kept-mb N]
//
// --backend is the workers' COMPUTE_BACKEND (wasm by default), --kept-mb the training worker's
// KEPT_PRODUCTS_MB (its default unless given); on a GPU machine the packed copy
// (tools/bench/gpu/pack-stack.sh) runs it with webgpu. Prints a markdown section for
// docs/benchmarks.md. Loopback only, bounded in count and time. Events are followed with the
// Server-Sent Events form of GET .../events, so every figure is when the client could first
// have known, not rounded up to a polling interval.
import type { SystemCheckReport, TrainingJobRecord } from '@trainyard/contracts';
import { makeModel, PRESETS, Preset } from '@trainyard/engine';
import OpenAI from 'openai';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sseBlocks } from '../../tests/e2e/src/support/sse';
import { Stack } from '../../tests/e2e/src/support/stack';
import { median, runBenchmark } from './bench-support';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'tiny' },
    packed: { type: 'string' },
    backend: { type: 'string', default: 'wasm' },
    'rollout-tokens': { type: 'string', default: '16' },
    groups: { type: 'string', default: '4' },
    'group-size': { type: 'string', default: '4' },
    'kept-mb': { type: 'string' },
  },
});
if (!(values.preset in PRESETS)) throw new Error(`--preset: one of ${Object.keys(PRESETS).join(', ')}`);
const preset = values.preset as Preset;
if (values.backend !== 'wasm' && values.backend !== 'webgpu') throw new Error('--backend: wasm or webgpu');
const backend = values.backend;
// experimental_config.packed_sequence_length: the service's default (2048 tokens a step)
// unless --packed says otherwise.
const packed = values.packed !== undefined ? Number(values.packed) : null;
/** Vulkan's and Dawn's environment, which the stack passes its apps only when named. */
const GPU_ENV = ['VK_DRIVER_FILES', 'VK_ICD_FILENAMES', 'LD_LIBRARY_PATH', 'XDG_RUNTIME_DIR'];
/** A whole number of at least 1 from option `name`. */
function count(name: 'rollout-tokens' | 'groups' | 'group-size'): number {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a whole number of at least 1`);
  return n;
}
const ROLLOUT_TOKENS = count('rollout-tokens');
const GROUP_SIZE = count('group-size');
// The full job's groups, one prompt each; past the first four, the same asks numbered.
const ASKS = ['Name a fruit.', 'Say a colour.', 'Give me an animal.', 'Pick a number.'];
const PROMPTS = Array.from({ length: count('groups') }, (_, i) => (i < ASKS.length ? ASKS[i] : `${ASKS[i % ASKS.length]} (${Math.floor(i / ASKS.length) + 1})`));
const fmt = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(0)} ms`);

interface Followed {
  id: string;
  /** ms from the POST being sent to each event's arrival on the stream (first arrival per type). */
  at: Record<string, number>;
  numSequences: number;
  gradientSteps: number;
}

async function main() {
  const env: Record<string, string> = { MAX_BATCH_SEQUENCES: '16', MAX_COMPLETION_TOKENS: '256', LOG_LEVEL: 'warn', RPC_TIMEOUT_MS: '30000', COMPUTE_BACKEND: backend };
  for (const name of GPU_ENV) if (process.env[name]) env[name] = process.env[name] as string;
  if (values['kept-mb'] !== undefined) env['KEPT_PRODUCTS_MB'] = values['kept-mb'];
  const stack = await Stack.start({ env });
  try {
    const base = `bench/${preset}`;
    makeModel({ preset, out: join(stack.modelsDir, base), seed: 1 });
    const key = (await stack.createKey('bench')).key;
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0, timeout: 600_000 });

    const api = <T>(method: string, path: string, body?: unknown): Promise<T> => stack.json<T>(method, path, key, body);

    // Chat admits work once it has seen an inference worker; this also loads the base model there.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.chat.completions.create({ model: base, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
        break;
      } catch (err) {
        if (attempt >= 120) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }

    const model = await api<{ id: string; entity: string; project: string; name: string }>('POST', '/v1/preview/models', {
      entity: null,
      project: 'bench',
      name: 'agent',
      base_model: base,
      return_existing: true,
    });
    const name = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;

    // Rollouts as ART gathers them (not timed): the Choice as returned, with logprobs and token ids.
    const groups = await Promise.all(
      PROMPTS.map(async (prompt) => {
        const messages = [{ role: 'user' as const, content: prompt }];
        const trajectories = await Promise.all(
          Array.from({ length: GROUP_SIZE }, async (_, i) => {
            const completion = await client.chat.completions.create({
              model: `${name}:step0`,
              messages,
              max_tokens: ROLLOUT_TOKENS,
              temperature: 1,
              logprobs: true,
              // @ts-expect-error ART's extension, sent as an extra body field
              return_token_ids: true,
            });
            const choice = completion.choices[0];
            // Shorter is better; the index breaks ties so that every group is trainable.
            return { messages_and_choices: [...messages, choice], reward: -(choice.message.content ?? '').length / 10 + i / 1000 };
          }),
        );
        return { trajectories };
      }),
    );

    /** POSTs the job and follows its events over SSE until the final one. */
    const runJob = async (trajectoryGroups: typeof groups): Promise<Followed> => {
      const started = performance.now();
      const { id } = await api<{ id: string }>('POST', '/v1/preview/training-jobs', {
        model_id: model.id,
        trajectory_groups: trajectoryGroups,
        experimental_config: { learning_rate: 1e-4, packed_sequence_length: packed },
      });
      const res = await stack.fetch(`/v1/preview/training-jobs/${id}/events`, { key, headers: { accept: 'text/event-stream' } });
      if (!res.ok || !res.body) throw new Error(`events stream: HTTP ${res.status}`);
      const followed: Followed = { id, at: {}, numSequences: 0, gradientSteps: 0 };
      for await (const block of sseBlocks(res.body)) {
        const type = /^event: (.+)$/m.exec(block)?.[1];
        if (!type) continue;
        followed.at[type] ??= performance.now() - started;
        const data = JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? '{}') as Record<string, unknown>;
        if (type === 'training_started') followed.numSequences = Number((data['data'] as Record<string, unknown> | undefined)?.['num_sequences'] ?? data['num_sequences'] ?? 0);
        if (type === 'gradient_step') followed.gradientSteps++;
        if (type === 'training_failed' || type === 'error') throw new Error(`job ${id} failed: ${JSON.stringify(data)}`);
        // Leaving the loop cancels the stream.
        if (type === 'training_ended') return followed;
      }
      throw new Error(`job ${id}: the event stream closed before training_ended`);
    };

    /** The first chat completion served by a step, timed from the moment training_ended was seen. */
    const firstServe = async (step: number) => {
      const t = performance.now();
      const { response } = await client.chat.completions
        .create({ model: `${name}:step${step}`, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 })
        .withResponse();
      const ms = performance.now() - t;
      if (response.headers.get('x-trainyard-checkpoint-step') !== String(step)) throw new Error(`step ${step} was not the one served`);
      return ms;
    };

    // Warm-up (not counted in the medians): the training worker's first job loads the base model.
    let step = 0;
    const small = groups.slice(0, 1);
    const cold = await runJob(small);
    const coldServe = await firstServe(++step);

    const toStarted: number[] = [];
    const toServed: number[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await runJob(small);
      toServed.push(await firstServe(++step));
      toStarted.push(job.at['training_started']);
    }

    const full = await runJob(groups);
    const fullServe = await firstServe(++step);
    const fullTotal = full.at['training_ended'];
    const fullTraining = full.at['training_ended'] - full.at['training_started'];
    const trainedTokens = (await api<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${full.id}`)).trained_tokens ?? 0;

    // What each kind of worker runs on, as it told the health service.
    const check = await api<SystemCheckReport>('GET', '/v1/system-check');
    const ranOn = (component: 'inference-workers' | 'training-workers') => {
      const workers = (check.components[component]?.['workers'] ?? []) as { backend: string; adapter: { description: string; device: string; fallback: boolean } | null }[];
      return workers.map((w) => (w.adapter ? `${w.backend} (${w.adapter.description || w.adapter.device}${w.adapter.fallback ? ', a fallback adapter' : ''})` : w.backend)).join(', ') || 'unknown';
    };

    const cpu = cpus()[0]?.model ?? 'unknown';
    console.log(`## Training jobs through the stack (${preset})

Measured by \`npx tsx --tsconfig tsconfig.base.json tools/bench/training-jobs.bench.ts --preset ${preset} --backend ${backend}${values.packed !== undefined ? ` --packed ${packed}` : ''}${ROLLOUT_TOKENS !== 16 ? ` --rollout-tokens ${ROLLOUT_TOKENS}` : ''}${PROMPTS.length !== 4 ? ` --groups ${PROMPTS.length}` : ''}${GROUP_SIZE !== 4 ? ` --group-size ${GROUP_SIZE}` : ''}${values['kept-mb'] !== undefined ? ` --kept-mb ${values['kept-mb']}` : ''}\` on ${new Date().toISOString().slice(0, 10)}:
${cpu}, ${cpus().length} cores, Node ${process.version}, one training worker on ${ranOn('training-workers')} and one inference worker on ${ranOn('inference-workers')},
events followed over Server-Sent Events (\`Accept: text/event-stream\`), learning rate 1e-4,
packed_sequence_length ${packed ?? 'default (2048)'}.
Rollouts (${PROMPTS.length} groups x ${GROUP_SIZE}, up to ${ROLLOUT_TOKENS} tokens at temperature 1, logprobs and token ids) were gathered
through chat completions beforehand and are not timed. (a) and (c) use one-group jobs on an
idle worker after a warm-up job.

| figure | measured | target |
|---|---|---|
| (a) POST to \`training_started\`, idle worker (median of 3) | ${fmt(median(toStarted))} (${toStarted.map(fmt).join(', ')}) | < 1 s |
| (b) RL job of ${PROMPTS.length} groups x ${GROUP_SIZE} trajectories, POST to \`training_ended\` | ${fmt(fullTotal)} (${full.numSequences} gradient step${full.numSequences === 1 ? '' : 's'}; \`training_started\` to \`training_ended\` ${fmt(fullTraining)}) | reported |
| (b) its tokens trained a second: \`trained_tokens\` / \`training_started\` to \`training_ended\` | ${((trainedTokens * 1000) / fullTraining).toFixed(0)} (${trainedTokens} tokens) | reported |
| (c) \`training_ended\` seen to first completion served by the new step, max_tokens 1 (median of 3) | ${fmt(median(toServed))} (${toServed.map(fmt).join(', ')}) | < 1 s |
| (c) the same after the ${PROMPTS.length} x ${GROUP_SIZE} job | ${fmt(fullServe)} | |
| warm-up: first job on the worker (base model load), POST to \`training_started\` / \`training_ended\` | ${fmt(cold.at['training_started'])} / ${fmt(cold.at['training_ended'])} | |
| warm-up: first completion from the first new step | ${fmt(coldServe)} | |
`);
  } finally {
    await stack.stop();
  }
}

runBenchmark(main);
