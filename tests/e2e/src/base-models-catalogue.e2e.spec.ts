import { startS3Server, TestS3Server } from '@trainyard/testing';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { ROOT, Stack } from './support/stack';

// A deployment in which no service and no worker sees a models volume, as
// k8s/components/base-models-in-store runs it: the registry's `publish-base-models` command,
// from a directory only it sees (the CronJob's volume), publishes the base model to the bucket
// and records it in the catalogue; the stack's registry (MODELS_DIR empty) lists and resolves it
// from there, chat reads its tokenizer from its bundle and the inference worker loads it by
// digest (BASE_MODEL_SOURCE=store, no ARTIFACT_ROOT). A model removed from the publisher's
// directory leaves the catalogue at its next run.

const BASE = 'trainyard/tiny-chat';
const NO_ROOT = '/dev/null/no-artifact-root';
const PREFIX = 'catalogue/';

describe('base models published from a volume no service mounts', () => {
  let s3: TestS3Server;
  let stack: Stack;
  let client: OpenAI;
  let publisherModels: string;

  /** The CronJob's run: the built registry in its publish mode, with the volume only it mounts. */
  const publish = async (embedded: string) => {
    const env = { PATH: process.env['PATH'] ?? '', ...s3.env, S3_PREFIX: PREFIX, DATABASE_URL: stack.databaseUrl, MODELS_DIR: publisherModels, EMBEDDED_BASE_MODEL: embedded, LOG_LEVEL: 'log' };
    const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'dist/apps/model-registry/main.js'), 'publish-base-models'], { env });
    return stdout;
  };
  const listed = async () => (await client.models.list()).data.map((m) => m.id);
  const ask = () => client.chat.completions.create({ model: BASE, messages: [{ role: 'user', content: 'Hello?' }], max_completion_tokens: 4, temperature: 0 });

  beforeAll(async () => {
    s3 = await startS3Server('trainyard-catalogue');
    publisherModels = mkdtempSync(join(tmpdir(), 'e2e-publisher-models-'));
    const fromStore = { ARTIFACT_ROOT: NO_ROOT, ARTIFACT_CACHE_MB: '64', BASE_MODEL_SOURCE: 'store' };
    stack = await Stack.start({
      env: { ...s3.env, S3_PREFIX: PREFIX, MAX_COMPLETION_TOKENS: '8' },
      appEnv: {
        'model-registry': { MODELS_DIR: '' },
        chat: { ...fromStore, MODEL_RESOLUTION_CACHE_TTL_MS: '0' },
        'inference-worker': fromStore,
        'training-worker': fromStore,
      },
    });
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('acme')).key, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await s3?.stop();
    rmSync(publisherModels, { recursive: true, force: true });
  }, 60_000);

  it('lists and serves a model once the publisher has run, and forgets it once it is gone from the volume', async () => {
    expect(await listed()).not.toContain(BASE);
    await expect(ask()).rejects.toMatchObject({ status: 404 });

    expect(await publish(BASE)).toMatch(/Published 1 base model\(s\): trainyard\/tiny-chat; removed 0 from the catalogue/);
    expect(await listed()).toContain(BASE);
    const completion = await ask();
    expect(completion.model).toBe(BASE);
    expect(completion.choices[0].finish_reason).toMatch(/stop|length/);
    // Chat counts the prompt with the tokenizer from the bundle: one too long for the window is refused.
    await expect(
      client.chat.completions.create({ model: BASE, messages: [{ role: 'user', content: 'word '.repeat(4000) }], max_completion_tokens: 4 }),
    ).rejects.toMatchObject({ status: 400, code: 'context_length_exceeded' });

    // A second run with nothing new hashes nothing and changes nothing.
    expect(await publish(BASE)).toMatch(/Published 1 base model\(s\): trainyard\/tiny-chat; removed 0/);

    rmSync(join(publisherModels, 'trainyard'), { recursive: true, force: true });
    expect(await publish('')).toMatch(/Published 0 base model\(s\); removed 1 from the catalogue/);
    expect(await listed()).not.toContain(BASE);
    await expect(ask()).rejects.toMatchObject({ status: 404 });
  }, 240_000);
});
