import { encodeForwardBackwardRequest } from '@trainyard/tinker';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { Stack } from './support/stack';

// The Tinker API driven by the real `tinker` Python SDK, unchanged (tests/e2e/python: the SDK
// and its pure-Python dependencies vendored, protobuf and zstandard from Debian through
// ensure_tinker_sdk in scripts/lib/common.sh). Tiny model on wasm.

const BASE = 'trainyard/tiny-chat';
const PYTHON_DIR = join(__dirname, '../python');
const DEBIAN_PACKAGES = '/usr/lib/python3/dist-packages';

/** Token rows for the supervised loop (the tiny model's vocabulary has 512 ids). */
const SEQUENCES = [
  [12, 40, 77, 101, 140, 33, 250, 7],
  [90, 91, 92, 93, 94, 95],
  [300, 12, 300, 12, 300, 12, 300],
];

describe('Tinker API with the real tinker SDK', () => {
  let stack: Stack;
  let key: string;
  let otherKey: string;
  let pythonPath: string;
  let linkDir: string;

  beforeAll(async () => {
    for (const pkg of ['google/protobuf', 'zstandard']) {
      if (!existsSync(join(DEBIAN_PACKAGES, pkg))) throw new Error(`${DEBIAN_PACKAGES}/${pkg} is missing: run ensure_tinker_sdk (scripts/lib/common.sh)`);
    }
    // Only those two Debian packages go on the path: the rest of dist-packages would shadow the machine's own.
    linkDir = mkdtempSync(join(tmpdir(), 'tinker-debian-'));
    for (const pkg of ['google', 'zstandard']) symlinkSync(join(DEBIAN_PACKAGES, pkg), join(linkDir, pkg));
    pythonPath = [join(PYTHON_DIR, 'vendor'), linkDir].join(':');
    stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '16' } });
    stack.addTinyModel(BASE);
    key = (await stack.createKey('acme')).key;
    otherKey = (await stack.createKey('globex')).key;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (linkDir) rmSync(linkDir, { recursive: true, force: true });
  }, 60_000);

  const tinker = (path: string, init: { apiKey?: string; body?: unknown; raw?: Uint8Array } = {}) =>
    fetch(`${stack.baseUrl}/api/v1/${path}`, {
      method: init.body === undefined && init.raw === undefined ? 'GET' : 'POST',
      headers: {
        ...(init.apiKey ? { 'x-api-key': init.apiKey } : {}),
        'content-type': init.raw ? 'application/x-protobuf' : 'application/json',
      },
      body: init.raw ? Buffer.from(init.raw) : init.body === undefined ? undefined : JSON.stringify(init.body),
    });

  it('runs an SL loop whose loss falls, resumes from save_state, serves the saved weights, and takes an RL step on a sample from them', async () => {
    const { stdout } = await promisify(execFile)('python3', [join(PYTHON_DIR, 'sl_loop.py'), stack.baseUrl, BASE, JSON.stringify(SEQUENCES), 'wandb-artifact:///acme/tinker/'], {
      env: { ...process.env, PYTHONPATH: pythonPath, TINKER_API_KEY: `tml-${key}` },
      timeout: 300_000,
      maxBuffer: 16 << 20,
    });
    const out = JSON.parse(stdout.trim().split('\n').at(-1) as string) as {
      models: string[];
      model_id: string;
      losses: number[];
      forward_loss: number;
      logprob_lengths: number[];
      path: string;
      state_path: string;
      resumed_model_id: string;
      resumed_loss: number;
      next_losses: number[];
      sampled_logprobs: number[];
      trainer_logprobs: number[];
      rl_loss: number;
      completion_tokens: number;
      ppo_loss: number;
      sdk_samples: number;
      sdk_tokens: number[];
      sdk_stop_reason: string;
      sdk_logprobs: number[];
      sdk_prompt_logprobs: (number | null)[];
      sdk_trainer_logprobs: number[];
      session_tokens: number[];
      runs: string[];
      runs_total: number;
      run_rank: number;
      run_base: string;
      run_last_sampler: string | null;
      checkpoints: [string, string][];
    };
    expect(out.models).toContain(BASE);
    expect(out.model_id).toMatch(/^[0-9a-f-]{36}:train:0$/);
    expect(out.losses).toHaveLength(5);
    expect(out.losses[4]).toBeLessThan(0.8 * out.losses[0]);
    // forward after the last optim_step sees the trained weights.
    expect(out.forward_loss).toBeLessThan(out.losses[4]);
    expect(out.logprob_lengths).toEqual(SEQUENCES.map((s) => s.length - 1));
    expect(out.path).toBe(`tinker://${out.model_id}/sampler_weights/sl-final`);

    // save_state, and a client made from it with the optimizer: the same weights, and the same next step.
    expect(out.state_path).toBe(`tinker://${out.model_id}/weights/sl-state`);
    expect(out.resumed_model_id).not.toBe(out.model_id);
    expect(Math.abs(out.resumed_loss - out.forward_loss)).toBeLessThan(1e-3 * out.forward_loss);
    expect(Math.abs(out.next_losses[1] - out.next_losses[0])).toBeLessThan(1e-3 * out.next_losses[0]);
    // The state is one object in the artifact store, which its row names; no bytes in PostgreSQL.
    const saved = await stack.withDatabase(async (db) => (await db.query('SELECT sha256, bytes, data FROM tinker_saved_states WHERE path = $1', [out.state_path])).rows);
    expect(saved).toEqual([{ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: expect.any(Number), data: null }]);
    expect(await stack.artifacts().has(saved[0].sha256)).toBe(true);

    // The saved weights are the newest checkpoint of the client's model, served under its name.
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: `wandb-artifact:///acme/tinker/${out.model_id.replace(/:/g, '-')}`,
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 4,
    });
    expect(completion.choices[0].message.role).toBe('assistant');
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);

    // Sampled from the saved weights: the trainer gives the sampled tokens the sampler's logprobs.
    expect(out.trainer_logprobs).toHaveLength(out.sampled_logprobs.length);
    out.trainer_logprobs.forEach((lp, i) => expect(Math.abs(lp - out.sampled_logprobs[i])).toBeLessThan(1e-3));
    // Sampled through the SDK (asample on a sampling session, protobuf SampleResponse): the
    // trainer's logprobs of the prompt and of the sampled tokens are the sampler's.
    const promptLength = 5;
    expect(out.sdk_samples).toBe(2);
    expect(out.sdk_tokens.length).toBeGreaterThan(0);
    expect(out.sdk_tokens.length).toBeLessThanOrEqual(6);
    expect(out.sdk_stop_reason).toMatch(/stop|length/i);
    expect(out.sdk_logprobs).toHaveLength(out.sdk_tokens.length);
    out.sdk_logprobs.forEach((lp, i) => expect(Math.abs(lp - out.sdk_trainer_logprobs[promptLength - 1 + i])).toBeLessThan(1e-3));
    expect(out.sdk_prompt_logprobs).toHaveLength(promptLength);
    expect(out.sdk_prompt_logprobs[0]).toBeNull();
    out.sdk_prompt_logprobs.slice(1).forEach((lp, i) => expect(Math.abs((lp as number) - out.sdk_trainer_logprobs[i])).toBeLessThan(1e-3));
    // save_weights_and_get_sampling_client: the same training state and seed, the same tokens.
    expect(out.session_tokens).toEqual(out.sdk_tokens);

    // On-policy importance sampling: every ratio is 1, so the loss is minus the summed advantages.
    expect(Math.abs(out.rl_loss + out.completion_tokens)).toBeLessThan(1e-2 * out.completion_tokens);
    expect(Number.isFinite(out.ppo_loss)).toBe(true);

    // The REST client lists both training clients (the resumed one too), and what the first saved, oldest first.
    expect(out.runs.sort()).toEqual([out.model_id, out.resumed_model_id].sort());
    expect(out.runs_total).toBe(2);
    expect([out.run_rank, out.run_base]).toEqual([8, BASE]);
    // The last sampler weights are the unnamed ones save_weights_and_get_sampling_client saved.
    expect(out.run_last_sampler?.startsWith(`tinker://${out.model_id}/sampler_weights/`)).toBe(true);
    expect(out.run_last_sampler).toMatch(/\/sampler_weights\/seq-\d+$/);
    expect(out.checkpoints.map(([type]) => type)).toEqual(['training', 'sampler', 'sampler']);
    expect(out.checkpoints.map(([, path]) => path).slice(0, 2)).toEqual([out.state_path, out.path]);

    // Another entity's key sees neither the training client nor its futures.
    const foreign = await tinker('optim_step', { apiKey: `tml-${otherKey}`, body: { model_id: out.model_id, seq_id: 100, adam_params: { learning_rate: 0.001, beta1: 0.9, beta2: 0.95, eps: 1e-12 } } });
    expect(foreign.status).toBe(404);
    // Nor its sampler weights.
    const foreignSampler = await tinker('create_sampling_session', { apiKey: `tml-${otherKey}`, body: { session_id: 'any', sampling_session_seq_id: 0, model_path: out.path } });
    expect(foreignSampler.status).toBe(404);
    const notAPath = await tinker('create_sampling_session', { apiKey: `tml-${key}`, body: { session_id: 'any', sampling_session_seq_id: 0, model_path: 'tinker://x/weights/y' } });
    expect(notAPath.status).toBe(400);
  }, 360_000);

  it('takes the key as the SDK sends it, and refuses bad requests with a 4xx that names the problem', async () => {
    expect((await tinker('get_server_capabilities', { apiKey: `tml-${key}` })).status).toBe(200);
    expect((await tinker('get_server_capabilities', { apiKey: key })).status).toBe(200);
    expect((await tinker('get_server_capabilities', { apiKey: 'tml-not-a-key' })).status).toBe(401);
    expect((await tinker('get_server_capabilities')).status).toBe(401);

    const session = (await (await tinker('create_session', { apiKey: `tml-${key}`, body: { tags: [], user_metadata: {}, sdk_version: '0.25.0', type: 'create_session' } })).json()) as { session_id: string };
    const unknownBase = await tinker('create_model', { apiKey: key, body: { session_id: session.session_id, model_seq_id: 0, base_model: 'no/such-model', lora_config: { rank: 8 } } });
    expect(unknownBase.status).toBe(400);
    expect(JSON.stringify(await unknownBase.json())).toContain('no/such-model');

    const garbage = await tinker('forward_backward', { apiKey: key, raw: Uint8Array.from([0xff, 0xff, 0xff]) });
    expect(garbage.status).toBe(400);
    const badLoss = encodeForwardBackwardRequest({ modelId: 'x', seqId: 1, lossFn: 'mse', lossFnConfig: {}, forwardOnly: false, data: [] });
    const refused = await tinker('forward_backward', { apiKey: key, raw: badLoss });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toContain('loss_fn "mse" is not one of');

    const missing = await tinker('retrieve_future', { apiKey: key, body: { request_id: '00000000-0000-4000-8000-000000000000' } });
    expect(missing.status).toBe(404);
  }, 60_000);
});
