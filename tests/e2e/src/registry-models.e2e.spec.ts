import { readBundleManifest } from '@trainyard/artifacts';
import type { CheckpointRecord, Page, ResolveModelReply } from '@trainyard/contracts';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { connect, JSONCodec, NatsConnection } from 'nats';
import OpenAI from 'openai';
import { Stack } from './support/stack';

interface ModelReply {
  id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
  run_id: string | null;
}

const BASE = 'trainyard/tiny-chat';

describe('model registry, end to end over HTTP', () => {
  let stack: Stack;
  let acme: string;
  let globex: string;

  beforeAll(async () => {
    // The registry writes its embedded default base model itself: a real model to register against.
    // Chat caches model resolutions; with a TTL longer than the file runs, only the registry's
    // change announcements can make it stop serving what was deleted.
    stack = await Stack.start({ env: { EMBEDDED_BASE_MODEL: BASE, MODEL_RESOLUTION_CACHE_TTL_MS: '3600000' } });
    acme = (await stack.createKey('acme')).key;
    globex = (await stack.createKey('globex')).key;
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const call = <T = Record<string, unknown>>(method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) =>
    stack.call<T>(method, path, { key, body, headers });

  const createModel = (key: string, fields: Record<string, unknown>, headers?: Record<string, string>) =>
    call<ModelReply>('POST', '/v1/preview/models', key, { entity: null, base_model: BASE, return_existing: true, ...fields }, headers);

  const checkpoints = (key: string, modelId: string, query = '') =>
    call<Page<CheckpointRecord>>('GET', `/v1/preview/models/${modelId}/checkpoints${query}`, key);

  /** The digests of the adapter bundles a model's checkpoints name in the artifact store. */
  const adapterBundles = (modelId: string): Promise<string[]> =>
    stack.withDatabase(async (db) => (await db.query('SELECT adapter_path FROM checkpoints WHERE model_id = $1', [modelId])).rows.map((r: { adapter_path: string }) => r.adapter_path.replace(/^sha256:/, '')));

  describe('base models', () => {
    it('lists the embedded default, which is always there', async () => {
      const res = await call<string[]>('GET', '/v1/preview/base-models', acme);
      expect(res.status).toBe(200);
      expect(res.body).toContain(BASE);
    });

    it('lists base models and the caller\'s trainable models through the official openai client', async () => {
      const model = (await createModel(acme, { project: 'listing', name: 'listed' })).body;
      await createModel(globex, { project: 'listing', name: 'hidden' });
      const client = new OpenAI({ apiKey: acme, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
      const ids: string[] = [];
      for await (const m of client.models.list()) ids.push(m.id);
      expect(ids).toContain(BASE);
      expect(ids).toContain(`wandb-artifact:///acme/listing/listed`);
      expect(ids.some((id) => id.includes('globex'))).toBe(false);
      expect(model.entity).toBe('acme');
    });
  });

  describe('the whole lifecycle', () => {
    let model: ModelReply;

    it('creates a model with checkpoint step 0 backed by a PEFT adapter in the artifact store', async () => {
      const res = await createModel(acme, { project: 'agents', name: 'lifecycle' });
      expect(res.status).toBe(200);
      model = res.body;
      expect(model).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        entity: 'acme',
        project: 'agents',
        name: 'lifecycle',
        base_model: BASE,
        run_id: null,
      });
      const page = await checkpoints(acme, model.id);
      expect(page.body.data).toEqual([
        { id: expect.any(String), step: 0, metrics: {}, created_at: expect.any(String), adapter_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      ]);
      const [bundle] = await adapterBundles(model.id);
      expect((await readBundleManifest(stack.artifacts(), bundle)).files.map((f) => f.name)).toEqual([
        'adapter_config.json',
        'adapter_model.safetensors',
      ]);
    });

    it('returns the same model for a get-or-create of the same name', async () => {
      const again = await createModel(acme, { project: 'agents', name: 'lifecycle', entity: 'acme' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(model);
      expect(await adapterBundles(model.id)).toHaveLength(1);
    });

    it('serves the model at once: resolves every accepted name form to its newest adapter', async () => {
      const nc = await connect({ servers: stack.nats.url });
      try {
        const resolve = (name: string, entity = 'acme') => resolveOverNats(nc, stack, entity, name);
        const newest = await resolve('wandb-artifact:///acme/agents/lifecycle');
        expect(newest).toMatchObject({ base_model: BASE, model_id: model.id, step: 0 });
        expect(newest.adapter_bundle).toEqual((await adapterBundles(model.id))[0]);
        expect(await stack.artifacts().has(newest.adapter_bundle as string)).toBe(true);
        expect(newest.base_model_dir).toBe(join(stack.modelsDir, BASE));
        for (const name of ['wandb-artifact:///acme/agents/lifecycle:step0', 'wandb-artifact:///acme/agents/lifecycle:latest', 'wandb-artifact:///acme/agents/lifecycle:v0', 'acme/agents/lifecycle:step0', 'acme/agents/lifecycle']) {
          expect(await resolve(name)).toMatchObject({ model_id: model.id, step: 0 });
        }
        expect(await resolve(BASE)).toMatchObject({ base_model: BASE, model_id: null, step: null, adapter_bundle: null });
        // Another entity naming acme's model gets exactly what a missing model gets.
        const foreign = await resolveOverNats(nc, stack, 'globex', 'wandb-artifact:///acme/agents/lifecycle').catch((e: Error) => e);
        const missing = await resolve('wandb-artifact:///acme/agents/nope').catch((e: Error) => e);
        expect(foreign).toMatchObject({ code: 'model_not_found' });
        expect(missing).toMatchObject({ code: 'model_not_found' });
        expect(await resolve('acme/agents/lifecycle:step9').catch((e: Error) => e)).toMatchObject({ code: 'model_not_found', message: expect.stringContaining('no checkpoint at step 9') });
      } finally {
        await nc.close();
      }
    });

    it('logs trajectories and shows the metrics, prefixed by split, on the current checkpoint', async () => {
      const groups = [
        { trajectories: [{ reward: 1, metrics: { correct: true } }, { reward: 0, metrics: { correct: false } }], exceptions: [] },
        { trajectories: [{ reward: 0.5, metrics: { correct: 1 }, messages_and_choices: [{ role: 'user', content: 'hi' }] }] },
      ];
      const res = await call('POST', `/v1/preview/models/${model.id}/log`, acme, { model_id: model.id, split: 'val', trajectory_groups: groups });
      expect(res.status).toBe(200);
      await call('POST', `/v1/preview/models/${model.id}/log`, acme, { split: 'train', trajectory_groups: [{ trajectories: [{ reward: 2 }] }] });

      const newest = await checkpoints(acme, model.id, '?limit=1&order=desc');
      const metrics = newest.body.data[0].metrics;
      expect(metrics['val/reward']).toBeCloseTo(0.5);
      expect(metrics['val/reward_std_dev']).toBeCloseTo(0.5);
      expect(metrics['val/exception_rate']).toBe(0);
      expect(metrics['val/correct']).toBeCloseTo(2 / 3);
      expect(metrics['train/reward']).toBe(2);
    });

    it('logs sampled text that PostgreSQL jsonb could not hold as is (a NUL character)', async () => {
      const groups = [{ trajectories: [{ reward: 3, messages_and_choices: [{ role: 'assistant', content: 'a\u0000b' }] }] }];
      const res = await call('POST', `/v1/preview/models/${model.id}/log`, acme, { split: 'nul', trajectory_groups: groups });
      expect(res.status).toBe(200);
      const newest = await checkpoints(acme, model.id, '?limit=1&order=desc');
      expect(newest.body.data[0].metrics['nul/reward']).toBe(3);
    });

    it('pages checkpoints in both orders, with has_more right on every page and an empty page past the end', async () => {
      // Training adds checkpoints; here the registry's own store is seeded through the database.
      const steps = await seedCheckpoints(stack, model.id, [1, 2, 3, 4]);
      expect(steps).toEqual([0, 1, 2, 3, 4]);

      const seen = async (order: 'asc' | 'desc') => {
        const pages: { steps: number[]; has_more: boolean }[] = [];
        let after = '';
        for (;;) {
          const page = (await checkpoints(acme, model.id, `?limit=2&order=${order}${after}`)).body;
          pages.push({ steps: page.data.map((c) => c.step), has_more: page.has_more });
          expect(page.first_id).toBe(page.data[0]?.id ?? null);
          expect(page.last_id).toBe(page.data.at(-1)?.id ?? null);
          if (!page.has_more) return { pages, last: page.last_id };
          after = `&after=${page.last_id}`;
        }
      };
      const asc = await seen('asc');
      expect(asc.pages).toEqual([
        { steps: [0, 1], has_more: true },
        { steps: [2, 3], has_more: true },
        { steps: [4], has_more: false },
      ]);
      const desc = await seen('desc');
      expect(desc.pages).toEqual([
        { steps: [4, 3], has_more: true },
        { steps: [2, 1], has_more: true },
        { steps: [0], has_more: false },
      ]);
      const pastTheEnd = await checkpoints(acme, model.id, `?order=asc&after=${asc.last}`);
      expect(pastTheEnd.body).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
      const defaults = await checkpoints(acme, model.id);
      expect(defaults.body.data.map((c) => c.step)).toEqual([0, 1, 2, 3, 4]);
    });

    it('deletes some steps, idempotently, and then serves from the highest remaining step', async () => {
      const first = await call('DELETE', `/v1/preview/models/${model.id}/checkpoints`, acme, { steps: [4, 2, 9] });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ deleted_count: 2, not_found_steps: [9] });
      const repeat = await call('DELETE', `/v1/preview/models/${model.id}/checkpoints`, acme, { steps: [4, 2, 9] });
      expect(repeat.body).toEqual({ deleted_count: 0, not_found_steps: [2, 4, 9] });

      const page = await checkpoints(acme, model.id, '?order=desc&limit=1');
      expect(page.body.data[0].step).toBe(3);
      const nc = await connect({ servers: stack.nats.url });
      expect(await resolveOverNats(nc, stack, 'acme', 'wandb-artifact:///acme/agents/lifecycle')).toMatchObject({ step: 3 });
      await nc.close();
    });

    it('refuses to delete the last remaining checkpoints, saying why, and deletes nothing', async () => {
      const res = await call<{ detail: string }>('DELETE', `/v1/preview/models/${model.id}/checkpoints`, acme, { steps: [0, 1, 3] });
      expect(res.status).toBe(409);
      expect(res.body.detail).toMatch(/only remaining checkpoints.*at least one to serve and train from/);
      expect((await checkpoints(acme, model.id)).body.data.map((c) => c.step)).toEqual([0, 1, 3]);
    });

    it('deletes the model with its checkpoints (their objects go with the registry\'s sweep)', async () => {
      expect((await adapterBundles(model.id)).length).toBeGreaterThan(0);
      const res = await call('DELETE', `/v1/preview/models/${model.id}`, acme);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ model_id: model.id, deleted_checkpoints: 3, deleted_run: false });
      expect(await adapterBundles(model.id)).toEqual([]);
      expect((await checkpoints(acme, model.id)).status).toBe(404);
      expect((await call('DELETE', `/v1/preview/models/${model.id}`, acme)).status).toBe(404);
      // The name is free again.
      const recreated = await createModel(acme, { project: 'agents', name: 'lifecycle', return_existing: false });
      expect(recreated.status).toBe(200);
      expect(recreated.body.id).not.toBe(model.id);
    });
  });

  describe('served through chat completions, every change at once', () => {
    const chat = () => new OpenAI({ apiKey: acme, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    /** The step that served it (header and field), or the error code. */
    const served = async (model: string) => {
      try {
        const { data, response } = await chat()
          .chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 })
          .withResponse();
        const field = (data as unknown as { checkpoint_step: number | null }).checkpoint_step;
        return { step: response.headers.get('x-trainyard-checkpoint-step'), field };
      } catch (err) {
        if (!(err instanceof OpenAI.APIError)) throw err;
        return { status: err.status, code: err.code };
      }
    };

    it('stops serving a deleted checkpoint by its step, and a name without a step falls back to the newest left', async () => {
      const model = (await createModel(acme, { project: 'serving', name: 'pruned' })).body;
      const name = `wandb-artifact:///acme/serving/pruned`;
      // Step 1 added behind the registry's back, before chat has seen the model at all.
      expect(await seedCheckpoints(stack, model.id, [1])).toEqual([0, 1]);
      for (let i = 0; i < 2; i++) {
        expect(await served(`${name}:step1`)).toEqual({ step: '1', field: 1 });
        expect(await served(name)).toEqual({ step: '1', field: 1 });
      }

      const deleted = await call('DELETE', `/v1/preview/models/${model.id}/checkpoints`, acme, { steps: [1] });
      expect(deleted.body).toEqual({ deleted_count: 1, not_found_steps: [] });
      expect(await served(`${name}:step1`)).toEqual({ status: 404, code: 'model_not_found' });
      expect(await served(name)).toEqual({ step: '0', field: 0 });
    });

    it('stops serving a deleted model at once, and serves a new model under its name at once', async () => {
      const model = (await createModel(acme, { project: 'serving', name: 'dropped' })).body;
      const name = `wandb-artifact:///acme/serving/dropped`;
      for (let i = 0; i < 2; i++) {
        expect(await served(name)).toEqual({ step: '0', field: 0 });
        expect(await served(`acme/serving/dropped:step0`)).toEqual({ step: '0', field: 0 });
      }

      expect((await call('DELETE', `/v1/preview/models/${model.id}`, acme)).status).toBe(200);
      expect(await served(name)).toEqual({ status: 404, code: 'model_not_found' });
      expect(await served(`acme/serving/dropped:step0`)).toEqual({ status: 404, code: 'model_not_found' });

      // "Not found" is never remembered: the name serves again as soon as a model has it.
      const again = (await createModel(acme, { project: 'serving', name: 'dropped' })).body;
      expect(again.id).not.toBe(model.id);
      expect(await served(name)).toEqual({ step: '0', field: 0 });
    });
  });

  describe('bad input', () => {
    let modelId: string;

    beforeAll(async () => {
      modelId = (await createModel(acme, { project: 'errors', name: 'target' })).body.id;
    });

    it('answers a name clash without return_existing with 409 naming the model', async () => {
      const res = await createModel(acme, { project: 'errors', name: 'target', return_existing: false });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: expect.stringContaining('Model "acme/errors/target" already exists') });
    });

    it('answers an unknown base model with 400 listing the ones there are', async () => {
      const res = await createModel(acme, { project: 'errors', name: 'other', base_model: 'no/such-model' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: expect.stringMatching(/^Unknown base model "no\/such-model"; this deployment has: .*trainyard\/tiny-chat/) });
    });

    it('answers a create in another entity with 403', async () => {
      const res = await createModel(acme, { project: 'errors', name: 'other', entity: 'globex' });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: 'This API key belongs to entity "acme" and cannot create models in entity "globex"' });
    });

    it.each([
      ['a missing project', { project: undefined, name: 'x' }, ['body', 'project']],
      ['a name with a slash', { project: 'p', name: 'a/b' }, ['body', 'name']],
      ['a non-boolean return_existing', { project: 'p', name: 'x', return_existing: 'yes' }, ['body', 'return_existing']],
      ['a missing base_model', { project: 'p', name: 'x', base_model: undefined }, ['body', 'base_model']],
    ])('answers %s with a 422 naming the field', async (_, fields, loc) => {
      const res = await createModel(acme, fields as Record<string, unknown>);
      expect(res.status).toBe(422);
      expect((res.body as unknown as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc)).toContainEqual(loc);
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['order=newest', 'order'],
    ])('answers checkpoints?%s with a 422 naming the parameter', async (query, field) => {
      const res = await call<{ detail: { loc: unknown[]; msg: string }[] }>('GET', `/v1/preview/models/${modelId}/checkpoints?${query}`, acme);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['query', field]);
    });

    it('answers an after id that is not a checkpoint of the model with 400 saying so', async () => {
      const res = await checkpoints(acme, modelId, '?after=00000000-0000-0000-0000-000000000000');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: `after: 00000000-0000-0000-0000-000000000000 is not a checkpoint of model ${modelId}` });
    });

    it.each([
      ['no steps', {}, ['body', 'steps']],
      ['an empty list', { steps: [] }, ['body', 'steps']],
      ['a negative step', { steps: [1, -1] }, ['body', 'steps']],
      ['a fractional step', { steps: [1.5] }, ['body', 'steps']],
    ])('answers a checkpoint delete with %s with 422', async (_, body, loc) => {
      const res = await call<{ detail: { loc: unknown[] }[] }>('DELETE', `/v1/preview/models/${modelId}/checkpoints`, acme, body);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(loc);
    });

    it('answers a log with a bad reward or metric with 422 naming where it is', async () => {
      const res = await call<{ detail: { loc: unknown[]; msg: string }[] }>('POST', `/v1/preview/models/${modelId}/log`, acme, {
        split: 'val',
        trajectory_groups: [{ trajectories: [{ reward: 1 }, { reward: 'high' }] }, { trajectories: [{ reward: 1, metrics: { x: 'y' } }] }],
      });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ['body', 'trajectory_groups', 0, 'trajectories', 1, 'reward'], msg: 'must be a finite number, got "high"', type: 'finite_number' },
        { loc: ['body', 'trajectory_groups', 1, 'trajectories', 0, 'metrics', 'x'], msg: 'must be a finite number or a boolean, got "y"', type: 'finite_number' },
      ]);
    });

    it('answers a log without a split or groups with 422', async () => {
      const res = await call<{ detail: { loc: unknown[] }[] }>('POST', `/v1/preview/models/${modelId}/log`, acme, { trajectory_groups: {} });
      expect(res.status).toBe(422);
      expect(res.body.detail.map((d) => d.loc)).toEqual([['body', 'split'], ['body', 'trajectory_groups']]);
    });

    it.each([
      ['GET', '/checkpoints'],
      ['DELETE', ''],
    ])('answers %s on a model id that does not exist (or is not a uuid) with 404', async (method, suffix) => {
      for (const id of ['00000000-0000-0000-0000-000000000000', 'not-a-uuid']) {
        const res = await call(method, `/v1/preview/models/${id}${suffix}`, acme);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ detail: `Model ${id} not found` });
      }
    });
  });

  describe('two entities', () => {
    it('cannot see, page, log to or delete each other\'s models', async () => {
      const mine = (await createModel(acme, { project: 'private', name: 'secret' })).body;
      const probes = [
        call('GET', `/v1/preview/models/${mine.id}/checkpoints`, globex),
        call('DELETE', `/v1/preview/models/${mine.id}/checkpoints`, globex, { steps: [0] }),
        call('POST', `/v1/preview/models/${mine.id}/log`, globex, { split: 'val', trajectory_groups: [] }),
        call('DELETE', `/v1/preview/models/${mine.id}`, globex),
      ];
      for (const res of await Promise.all(probes)) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ detail: `Model ${mine.id} not found` });
      }
      expect((await checkpoints(acme, mine.id)).body.data).toHaveLength(1);
    });

    it('each get their own model under the same project and name', async () => {
      const a = (await createModel(acme, { project: 'shared', name: 'same' })).body;
      const b = (await createModel(globex, { project: 'shared', name: 'same' })).body;
      expect(a.id).not.toBe(b.id);
      expect(b.entity).toBe('globex');
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first result of a repeated create', async () => {
      const headers = { 'idempotency-key': 'create-once-1' };
      const first = await createModel(acme, { project: 'idem', name: 'once', return_existing: false }, headers);
      expect(first.status).toBe(200);
      const retry = await createModel(acme, { project: 'idem', name: 'once', return_existing: false }, headers);
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual(first.body);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      // Without the key the same request is a name clash: the replay really was a replay.
      expect((await createModel(acme, { project: 'idem', name: 'once', return_existing: false })).status).toBe(409);
    });

    it('refuses the same key with a different request, naming the header', async () => {
      const headers = { 'idempotency-key': 'create-once-2' };
      expect((await createModel(acme, { project: 'idem', name: 'two' }, headers)).status).toBe(200);
      const reused = await createModel(acme, { project: 'idem', name: 'three' }, headers);
      expect(reused.status).toBe(422);
      expect((reused.body as unknown as { detail: { loc: string[]; msg: string }[] }).detail[0]).toMatchObject({
        loc: ['header', 'idempotency-key'],
        msg: expect.stringContaining('already used with a different request'),
      });
    });

    it('keeps the keys of two entities apart', async () => {
      const headers = { 'idempotency-key': 'same-key-both-entities' };
      const a = await createModel(acme, { project: 'idem', name: 'four' }, headers);
      const b = await createModel(globex, { project: 'idem', name: 'four' }, headers);
      expect(b.status).toBe(200);
      expect(b.body.entity).toBe('globex');
      expect(b.body.id).not.toBe(a.body.id);
    });

    it('does not remember a failure: a retry after fixing the cause runs again', async () => {
      const headers = { 'idempotency-key': 'fails-first' };
      const body = { project: 'idem', name: 'late-base', base_model: 'late/base' };
      expect((await createModel(acme, body, headers)).status).toBe(400);
      stack.addTinyModel('late/base');
      const retry = await createModel(acme, body, headers);
      expect(retry.status).toBe(200);
      expect(retry.body.base_model).toBe('late/base');
    });
  });
});

/** Chat's view of the registry: the resolve subject, over the stack's own NATS, in Nest's wire format. */
async function resolveOverNats(nc: NatsConnection, stack: Stack, entity: string, model: string): Promise<ResolveModelReply> {
  const codec = JSONCodec<{ response?: ResolveModelReply; err?: { code: string; message: string } }>();
  const entityId = await stack.entityId(entity);
  const msg = await nc.request(
    'registry.model.resolve.v1',
    JSONCodec().encode({ pattern: 'registry.model.resolve.v1', id: String(Math.random()), data: { entity_id: entityId, entity_name: entity, model } }),
    { timeout: 5_000 },
  );
  const reply = codec.decode(msg.data);
  if (reply.err) throw Object.assign(new Error(reply.err.message), reply.err);
  return reply.response as ResolveModelReply;
}

/** Adds checkpoints as a finished training job would (rows naming a stored adapter: step 0's), through the database. */
async function seedCheckpoints(stack: Stack, modelId: string, steps: number[]): Promise<number[]> {
  return stack.withDatabase(async (db) => {
    const { rows: [first] } = await db.query('SELECT adapter_path, adapter_sha256 FROM checkpoints WHERE model_id = $1 AND step = 0', [modelId]);
    for (const step of steps) {
      const id = randomUUID();
      const adapterPath = first.adapter_path;
      await db.query('INSERT INTO checkpoints (id, model_id, step, adapter_path, adapter_sha256) VALUES ($1, $2, $3, $4, $5)', [
        id,
        modelId,
        step,
        adapterPath,
        first.adapter_sha256,
      ]);
    }
    await db.query('UPDATE models SET last_step = $2 WHERE id = $1', [modelId, Math.max(...steps)]);
    const { rows } = await db.query('SELECT step FROM checkpoints WHERE model_id = $1 ORDER BY step', [modelId]);
    return rows.map((r: { step: number }) => r.step);
  });
}
