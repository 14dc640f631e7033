import { DiskArtifactStore, putBundleFromDir, readBundleManifest, S3ArtifactStore } from '@trainyard/artifacts';
import { startS3Server, TestS3Server, waitFor } from '@trainyard/testing';
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { Stack } from './support/stack';

// A stack whose artifact store is an S3-compatible server (s3rver): an uploaded file, an SFT
// job's checkpoint written by the training worker, and that checkpoint served by chat
// completions, with both workers given no ARTIFACT_ROOT they could read (a path under
// /dev/null): every adapter they load comes from the bucket, by digest, through their cache.
// The registry publishes the base model to the bucket too (PUBLISH_BASE_MODELS), and the
// workers load it from there (BASE_MODEL_SOURCE=store): once it is published, the weights on
// the models volume are broken behind everyone's back (same size, same time, garbage header),
// so a worker that read the volume could neither train nor serve.

const BASE = 'trainyard/tiny-chat';
const NO_ROOT = '/dev/null/no-artifact-root';

const line = (question: string, answer: string) => JSON.stringify({ messages: [{ role: 'user', content: question }, { role: 'assistant', content: answer }] });
const TRAIN = [line('Capital of France?', 'Paris'), line('Capital of Italy?', 'Rome')].join('\n') + '\n';

describe('the artifact store in S3-compatible object storage', () => {
  let s3: TestS3Server;
  let stack: Stack;
  let client: OpenAI;
  let store: S3ArtifactStore;

  beforeAll(async () => {
    s3 = await startS3Server('trainyard-e2e');
    const workers = { ARTIFACT_ROOT: NO_ROOT, ARTIFACT_CACHE_MB: '64', BASE_MODEL_SOURCE: 'store' };
    stack = await Stack.start({
      env: { ...s3.env, S3_PREFIX: 'stack/', EMBEDDED_BASE_MODEL: BASE, MAX_COMPLETION_TOKENS: '8' },
      appEnv: { 'inference-worker': workers, 'training-worker': workers, 'model-registry': { PUBLISH_BASE_MODELS: 'true' } },
    });
    store = stack.artifacts() as S3ArtifactStore;

    // The bundle the registry publishes is the one these files make (the manifest is deterministic).
    const modelDir = join(stack.modelsDir, BASE);
    const scratch = mkdtempSync(join(tmpdir(), 'e2e-base-bundle-'));
    const expected = (await putBundleFromDir(new DiskArtifactStore(scratch), modelDir, { skipDirectories: true })).sha256;
    rmSync(scratch, { recursive: true, force: true });
    await waitFor(() => store.has(expected), { what: `the base model's bundle ${expected} in the bucket`, timeoutMs: 30_000 });
    // Broken in a copy outside the model's directory, renamed over the original with its time,
    // so that the registry never sees the directory change (it would publish the broken weights
    // as a new bundle, which would be right).
    const weights = join(modelDir, 'model.safetensors');
    const broken = join(stack.modelsDir, '.broken-model.safetensors');
    const { atime, mtimeMs } = statSync(weights);
    copyFileSync(weights, broken);
    const fd = openSync(broken, 'r+');
    writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, 0);
    closeSync(fd);
    // The same millisecond (what the registry's signature reads): set in its middle, as seconds
    // in a double lose a few nanoseconds and the millisecond's start could read as the one before.
    utimesSync(broken, atime, (Math.floor(mtimeMs) + 0.5) / 1000);
    expect(Math.floor(statSync(broken).mtimeMs)).toBe(Math.floor(mtimeMs));
    renameSync(broken, weights);
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('acme')).key, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    store?.destroy();
    await stack?.stop();
    await s3?.stop();
  }, 60_000);

  it('trains an SFT job on an uploaded file and serves its checkpoint from the bucket', async () => {
    const file = await client.files.create({ file: await toFile(Buffer.from(TRAIN), 'train.jsonl'), purpose: 'fine-tune' });
    // The upload is one object, named by its digest.
    const objects = async () => {
      const all = new Map<string, number>();
      for await (const o of store.list()) all.set(o.sha256, o.bytes);
      return all;
    };
    const uploaded = [...(await objects()).entries()].filter(([, bytes]) => bytes === Buffer.byteLength(TRAIN));
    expect(uploaded).toHaveLength(1);
    expect((await client.files.content(file.id).then((r) => r.text()))).toBe(TRAIN);

    const job = await client.fineTuning.jobs.create({
      model: BASE,
      training_file: file.id,
      suffix: 's3',
      seed: 1,
      method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 1, batch_size: 2 } } },
    });
    const done = await waitFor(
      async () => {
        const current = await client.fineTuning.jobs.retrieve(job.id);
        return ['succeeded', 'failed', 'cancelled'].includes(current.status) && current;
      },
      { what: `fine-tuning job ${job.id}`, timeoutMs: 240_000, intervalMs: 500 },
    );
    expect(done).toMatchObject({ status: 'succeeded', error: null });
    const model = done.fine_tuned_model as string;

    // The checkpoint's adapter is a bundle in the bucket: its manifest and both files.
    const bundle = await stack.withDatabase(async (db) => {
      const { rows } = await db.query("SELECT c.adapter_path FROM checkpoints c JOIN models m ON m.id = c.model_id WHERE c.step = 1 AND m.name LIKE 's3-%'");
      return rows[0]?.adapter_path as string;
    });
    expect(bundle).toMatch(/^sha256:[0-9a-f]{64}$/);
    const manifest = await readBundleManifest(store, bundle.slice('sha256:'.length));
    expect(manifest.files.map((f) => f.name)).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    for (const f of manifest.files) expect(await store.has(f.sha256)).toBe(true);

    // Served by the inference worker, which has no ARTIFACT_ROOT: the adapter came from the bucket.
    const completion = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Capital of France?' }], max_completion_tokens: 4, temperature: 0 });
    expect(completion.model).toBe(model);
    expect(completion.choices[0].message.role).toBe('assistant');
    expect(completion.choices[0].finish_reason).toMatch(/stop|length/);

    // Nothing was written to disk as an artifact: the registry's ARTIFACT_ROOT holds no objects.
    expect(existsSync(join(stack.artifactsDir, 'objects'))).toBe(false);
    expect(readdirSync(stack.artifactsDir)).toEqual([]);
  });
});
