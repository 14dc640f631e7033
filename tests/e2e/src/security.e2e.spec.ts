import type { CheckpointRecord, Page, TrainingEventRecord, TrainingJobRecord } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Answer, filesUnder, multipart, send, storedState } from './support/hostile-http';
import { AppName, Stack } from './support/stack';

// Security, end to end: keys only as digests, never in a log; every id of one entity a 404 to
// another; revocation at once; uploads that cannot leave the artifact root; request logs that
// carry the request id and nothing secret.

const BASE = 'trainyard/tiny-chat';
const APPS: AppName[] = ['gateway', 'chat', 'model-registry', 'training-orchestrator', 'health', 'inference-worker', 'training-worker'];
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('security', () => {
  let stack: Stack;
  /** Keys this test has issued. */
  const issued: string[] = [];
  /** Every secret this test has issued or sent: none may ever be stored or logged. */
  const secrets: string[] = [];
  let acme: string;
  let globex: string;
  const acmeIds = {} as { model: string; checkpoint: string; file: string; job: string; event: string; fineTuningJob: string; response: string; outputItem: string; conversation: string; conversationItem: string; chatCompletion: string; tinkerClient: string; tinkerFuture: string };
  let globexModel: string;
  let globexFile: string;
  let globexConversation: string;

  const DATASET = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });

  async function newKey(entity: string): Promise<{ key: string; id: string }> {
    const created = await stack.createKey(entity);
    issued.push(created.key);
    secrets.push(created.key);
    return created;
  }

  async function upload(key: string, filename: string, data = DATASET): Promise<Answer> {
    const { body, contentType } = multipart([
      { name: 'purpose', data: 'fine-tune' },
      { name: 'file', filename, contentType: 'application/jsonl', data },
    ]);
    return send(stack.baseUrl, { method: 'POST', path: '/v1/files', key, body, headers: { 'content-type': contentType } });
  }

  const call = (method: string, path: string, key: string, body?: unknown) =>
    send(stack.baseUrl, {
      method,
      path,
      key,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    // Every process at its most talkative: whatever it ever logs is here to be searched.
    stack = await Stack.start({ env: { LOG_LEVEL: 'verbose', KEY_RATE_LIMIT_REQUESTS: '0' } });
    stack.addTinyModel(BASE);
    acme = (await newKey('acme')).key;
    globex = (await newKey('globex')).key;

    const model = await stack.json<{ id: string }>('POST', '/v1/preview/models', acme, { project: 'secret-project', name: 'crown-jewels', base_model: BASE, return_existing: true });
    acmeIds.model = model.id;
    acmeIds.checkpoint = (await stack.json<Page<CheckpointRecord>>('GET', `/v1/preview/models/${model.id}/checkpoints`, acme)).data[0].id;
    acmeIds.file = ((await upload(acme, 'acme.jsonl')).json as { id: string }).id;
    const job = await stack.json<{ id: string }>('POST', '/v1/preview/sft-training-jobs', acme, { model_id: model.id, training_data_url: acmeIds.file });
    acmeIds.job = job.id;
    await stack.call('POST', `/v1/preview/training-jobs/${job.id}/cancel`, { key: acme });
    await waitFor(
      async () => ['cancelled', 'succeeded', 'failed'].includes((await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.id}`, acme)).status),
      { what: 'the job to end', timeoutMs: 120_000, intervalMs: 200 },
    );
    acmeIds.event = (await stack.json<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${job.id}/events`, acme)).data[0].id;
    const fineTuning = await stack.json<{ id: string }>('POST', '/v1/fine_tuning/jobs', acme, { model: BASE, training_file: acmeIds.file, suffix: 'crown' });
    acmeIds.fineTuningJob = fineTuning.id;
    await stack.call('POST', `/v1/fine_tuning/jobs/${fineTuning.id}/cancel`, { key: acme });
    await waitFor(async () => ['cancelled', 'succeeded', 'failed'].includes((await stack.json<{ status: string }>('GET', `/v1/fine_tuning/jobs/${fineTuning.id}`, acme)).status), {
      what: 'the fine-tuning job to end',
      timeoutMs: 120_000,
      intervalMs: 200,
    });

    // A stored response and a conversation of acme's, with an item each.
    const response = await stack.json<{ id: string; output: { id: string }[] }>('POST', '/v1/responses', acme, { model: BASE, input: 'acme secret', max_output_tokens: 2 });
    acmeIds.response = response.id;
    acmeIds.outputItem = response.output[0].id;
    acmeIds.conversation = (await stack.json<{ id: string }>('POST', '/v1/conversations', acme, { items: [{ role: 'user', content: 'acme secret' }] })).id;
    acmeIds.conversationItem = (await stack.json<{ data: { id: string }[] }>('GET', `/v1/conversations/${acmeIds.conversation}/items`, acme)).data[0].id;
    // A stored chat completion of acme's, with the metadata an export filters on.
    acmeIds.chatCompletion = (
      await stack.json<{ id: string }>('POST', '/v1/chat/completions', acme, { model: BASE, messages: [{ role: 'user', content: 'acme secret' }], max_tokens: 2, store: true, metadata: { secret: 'acme', reward: '1' } })
    ).id;

    // A Tinker training client of acme's (its create_model future is done at once).
    const session = (await call('POST', '/api/v1/create_session', acme, { tags: [], user_metadata: {}, sdk_version: '0.25.0' })).json as { session_id: string };
    const created = (await call('POST', '/api/v1/create_model', acme, { session_id: session.session_id, model_seq_id: 0, base_model: BASE, lora_config: { rank: 8 } })).json as { request_id: string; model_id: string };
    [acmeIds.tinkerClient, acmeIds.tinkerFuture] = [created.model_id, created.request_id];

    globexModel = (await stack.json<{ id: string }>('POST', '/v1/preview/models', globex, { project: 'p', name: 'own', base_model: BASE, return_existing: true })).id;
    globexFile = ((await upload(globex, 'globex.jsonl')).json as { id: string }).id;
    globexConversation = (await stack.json<{ id: string }>('POST', '/v1/conversations', globex, {})).id;
  }, 300_000);

  afterAll(() => stack?.stop(), 60_000);

  /** Neither a secret nor the part of it that is never displayed (all but its 10-character prefix). */
  function expectNoSecretIn(text: string): void {
    for (const secret of secrets) {
      expect(text.includes(secret)).toBe(false);
      if (secret.length > 20) expect(text.includes(secret.slice(10))).toBe(false);
    }
  }

  describe('API keys', () => {
    it('are stored only as their SHA-256: no secret appears anywhere in the database', async () => {
      const { tables } = (await storedState(stack)) as { tables: Record<string, string[]> };
      const rows = await stack.withDatabase(async (db) => (await db.query<{ hash: string; prefix: string }>('SELECT hash, prefix FROM api_keys')).rows);
      expect(rows.map((r) => r.hash).sort()).toEqual(issued.map(sha256).sort());
      for (const row of rows) {
        expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
        expect(row.prefix).toHaveLength(10);
      }
      expectNoSecretIn(JSON.stringify(tables));
    });

    it('are matched whole: a key one character off, longer, shorter or of another case is refused', async () => {
      const variants = [
        acme.slice(0, -1),
        `${acme}x`,
        acme.slice(0, -1) + (acme.endsWith('A') ? 'B' : 'A'),
        acme.toUpperCase(),
        acme.slice(0, 10),
        `${acme.slice(0, 10)}${'A'.repeat(acme.length - 10)}`,
      ];
      for (const variant of variants) {
        secrets.push(variant);
        const answer = await call('GET', '/v1/models', variant);
        expect(answer.status).toBe(401);
        expect((answer.json as { error: { message: string } }).error.message).toBe('Unknown API key');
      }
    });

    it('stop working the moment they are revoked, on every kind of route, and only the revoked one', async () => {
      const doomed = await newKey('acme');
      const routes: [string, string, unknown?][] = [
        ['GET', '/v1/models'],
        ['GET', `/v1/preview/models/${acmeIds.model}/checkpoints`],
        ['GET', `/v1/files/${acmeIds.file}`],
        ['GET', `/v1/preview/training-jobs/${acmeIds.job}/events`],
        ['POST', '/v1/chat/completions', { model: BASE, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }],
      ];
      for (const [method, path, body] of routes) expect((await call(method, path, doomed.key, body)).status).toBe(200);

      expect((await stack.keys('revoke', doomed.id)).code).toBe(0);

      for (const [method, path, body] of routes) {
        const answer = await call(method, path, doomed.key, body);
        expect(answer.status).toBe(401);
        expect(answer.text).toMatch(/was revoked/);
      }
      for (const [method, path, body] of routes) expect((await call(method, path, acme, body)).status).toBe(200);
    });
  });

  describe('entity isolation: every id of one entity is a 404 to another, exactly like an id that does not exist', () => {
    const ghost = randomUUID();
    const ghostFile = `file-${'Z'.repeat(24)}`;
    const ghostFineTuningJob = `ftjob-${randomUUID().replaceAll('-', '')}`;
    const ghostResponse = `resp_${'0'.repeat(32)}`;
    const ghostConversation = `conv_${'0'.repeat(48)}`;
    const ghostChatCompletion = `chatcmpl-${randomUUID()}`;

    /** [route, acme's id on it, a fresh id of the same form, request body]. */
    const routes = (): [string, (id: string) => string, string, string, unknown?][] => [
      ['GET', (id) => `/v1/preview/models/${id}/checkpoints`, acmeIds.model, ghost],
      ['GET', (id) => `/v1/preview/models/${id}/trajectories`, acmeIds.model, ghost],
      ['DELETE', (id) => `/v1/preview/models/${id}/checkpoints`, acmeIds.model, ghost, { steps: [0] }],
      ['POST', (id) => `/v1/preview/models/${id}/log`, acmeIds.model, ghost, { split: 'train', trajectory_groups: [{ trajectories: [{ reward: 1 }] }] }],
      ['DELETE', (id) => `/v1/preview/models/${id}`, acmeIds.model, ghost],
      ['GET', (id) => `/v1/files/${id}`, acmeIds.file, ghostFile],
      ['GET', (id) => `/v1/files/${id}/content`, acmeIds.file, ghostFile],
      ['DELETE', (id) => `/v1/files/${id}`, acmeIds.file, ghostFile],
      ['GET', (id) => `/v1/preview/training-jobs/${id}`, acmeIds.job, ghost],
      ['GET', (id) => `/v1/preview/training-jobs/${id}/events`, acmeIds.job, ghost],
      ['POST', (id) => `/v1/preview/training-jobs/${id}/cancel`, acmeIds.job, ghost],
      ['GET', (id) => `/v1/fine_tuning/jobs/${id}`, acmeIds.fineTuningJob, ghostFineTuningJob],
      ['GET', (id) => `/v1/fine_tuning/jobs/${id}/events`, acmeIds.fineTuningJob, ghostFineTuningJob],
      ['GET', (id) => `/v1/fine_tuning/jobs/${id}/checkpoints`, acmeIds.fineTuningJob, ghostFineTuningJob],
      ['POST', (id) => `/v1/fine_tuning/jobs/${id}/cancel`, acmeIds.fineTuningJob, ghostFineTuningJob],
      ['GET', (id) => `/v1/responses/${id}`, acmeIds.response, ghostResponse],
      ['GET', (id) => `/v1/responses/${id}/input_items`, acmeIds.response, ghostResponse],
      ['DELETE', (id) => `/v1/responses/${id}`, acmeIds.response, ghostResponse],
      ['GET', (id) => `/v1/conversations/${id}`, acmeIds.conversation, ghostConversation],
      ['POST', (id) => `/v1/conversations/${id}`, acmeIds.conversation, ghostConversation, { metadata: { taken: 'yes' } }],
      ['DELETE', (id) => `/v1/conversations/${id}`, acmeIds.conversation, ghostConversation],
      ['GET', (id) => `/v1/conversations/${id}/items`, acmeIds.conversation, ghostConversation],
      ['POST', (id) => `/v1/conversations/${id}/items`, acmeIds.conversation, ghostConversation, { items: [{ role: 'user', content: 'planted' }] }],
      ['GET', (id) => `/v1/conversations/${id}/items/${acmeIds.conversationItem}`, acmeIds.conversation, ghostConversation],
      ['DELETE', (id) => `/v1/conversations/${id}/items/${acmeIds.conversationItem}`, acmeIds.conversation, ghostConversation],
      ['GET', (id) => `/v1/chat/completions/${id}`, acmeIds.chatCompletion, ghostChatCompletion],
      ['GET', (id) => `/v1/chat/completions/${id}/messages`, acmeIds.chatCompletion, ghostChatCompletion],
      ['POST', (id) => `/v1/chat/completions/${id}`, acmeIds.chatCompletion, ghostChatCompletion, { metadata: { taken: 'yes' } }],
      ['DELETE', (id) => `/v1/chat/completions/${id}`, acmeIds.chatCompletion, ghostChatCompletion],
      ['GET', (id) => `/api/v1/training_runs/${id}`, acmeIds.tinkerClient, `${ghost}:train:0`],
      ['GET', (id) => `/api/v1/training_runs/${id}/checkpoints`, acmeIds.tinkerClient, `${ghost}:train:0`],
      // Each of its own conversations is a 404 for an item of acme's too.
      ['GET', (id) => `/v1/conversations/${globexConversation}/items/${id}`, acmeIds.conversationItem, 'msg_ghost'],
    ];

    it.each(Array.from({ length: routes().length }, (_, i) => i))('route %i', async (index) => {
      const [method, path, theirs, missing, body] = routes()[index];
      const denied = await call(method, path(theirs), globex, body);
      const absent = await call(method, path(missing), globex, body);
      expect(denied.status).toBe(404);
      expect(absent.status).toBe(404);
      // Same answer but for the id itself: nothing tells "exists but not yours" from "does not exist".
      expect(denied.text.replaceAll(theirs, '<id>')).toBe(absent.text.replaceAll(missing, '<id>'));
    });

    it('the event stream of another entity\'s job is a 404 before any stream opens', async () => {
      const answer = await send(stack.baseUrl, { method: 'GET', path: `/v1/preview/training-jobs/${acmeIds.job}/events`, key: globex, headers: { accept: 'text/event-stream', 'last-event-id': acmeIds.event } });
      expect(answer.status).toBe(404);
      expect(String(answer.headers['content-type'])).toMatch(/application\/json/);
    });

    it('ids of another entity inside bodies and queries are refused the same way', async () => {
      const rl = await call('POST', '/v1/preview/training-jobs', globex, { model_id: acmeIds.model, trajectory_groups: [] });
      expect(rl.status).toBe(404);
      const sftTheirModel = await call('POST', '/v1/preview/sft-training-jobs', globex, { model_id: acmeIds.model, training_data_url: globexFile });
      expect(sftTheirModel.status).toBe(404);
      const sftTheirFile = await call('POST', '/v1/preview/sft-training-jobs', globex, { model_id: globexModel, training_data_url: acmeIds.file });
      expect(sftTheirFile.status).toBe(404);
      expect(sftTheirFile.text).toContain(`No such File object: ${acmeIds.file}`);
      const afterTheirCheckpoint = await call('GET', `/v1/preview/models/${globexModel}/checkpoints?after=${acmeIds.checkpoint}`, globex);
      expect(afterTheirCheckpoint.status).toBe(400);
      const afterTheirEvent = await call('GET', `/v1/preview/training-jobs/${acmeIds.job}/events?after=${acmeIds.event}`, globex);
      expect(afterTheirEvent.status).toBe(404);
      // Their job's id as a filter on one's own model's trajectories matches nothing of theirs.
      const theirJobsTrajectories = await call('GET', `/v1/preview/models/${globexModel}/trajectories?job_id=${acmeIds.job}`, globex);
      expect(theirJobsTrajectories.status).toBe(200);
      expect((theirJobsTrajectories.json as { data: unknown[] }).data).toEqual([]);
      // A fine-tuning job on their file is refused as on a file that does not exist; their jobs are in no list of ours.
      const fineTuneTheirFile = await call('POST', '/v1/fine_tuning/jobs', globex, { model: BASE, training_file: acmeIds.file });
      const fineTuneNoFile = await call('POST', '/v1/fine_tuning/jobs', globex, { model: BASE, training_file: ghostFile });
      expect(fineTuneTheirFile.status).toBe(400);
      expect(fineTuneTheirFile.text.replaceAll(acmeIds.file, '<id>')).toBe(fineTuneNoFile.text.replaceAll(ghostFile, '<id>'));
      const listed = (await call('GET', '/v1/fine_tuning/jobs', globex)).json as { data: unknown[] };
      expect(listed.data).toEqual([]);
      const afterTheirJob = await call('GET', `/v1/fine_tuning/jobs?after=${acmeIds.fineTuningJob}`, globex);
      expect(afterTheirJob.status).toBe(400);
      // Tinker: their training client takes no call, their future is not ours to read, their runs are in no list of ours.
      const adam = { learning_rate: 0.001, beta1: 0.9, beta2: 0.95, eps: 1e-12 };
      const theirClient = await call('POST', '/api/v1/optim_step', globex, { model_id: acmeIds.tinkerClient, seq_id: 1, adam_params: adam });
      const noClient = await call('POST', '/api/v1/optim_step', globex, { model_id: `${ghost}:train:0`, seq_id: 1, adam_params: adam });
      expect(theirClient.status).toBe(404);
      expect(theirClient.text.replaceAll(acmeIds.tinkerClient, '<id>')).toBe(noClient.text.replaceAll(`${ghost}:train:0`, '<id>'));
      const theirFuture = await call('POST', '/api/v1/retrieve_future', globex, { request_id: acmeIds.tinkerFuture });
      expect(theirFuture.status).toBe(404);
      const runs = (await call('GET', '/api/v1/training_runs', globex)).json as { training_runs: unknown[] };
      expect(runs.training_runs).toEqual([]);
      const theirSampler = await call('POST', '/api/v1/create_sampling_session', globex, { session_id: 'any', sampling_session_seq_id: 0, model_path: `tinker://${acmeIds.tinkerClient}/sampler_weights/x` });
      expect(theirSampler.status).toBe(404);
    });

    it('another entity\'s responses and conversations can be neither continued, nor referenced, nor written to by a response', async () => {
      const respond = (body: Record<string, unknown>) => call('POST', '/v1/responses', globex, { model: BASE, input: 'hi', max_output_tokens: 2, ...body });
      const reference = (id: string) => ({ input: [{ type: 'item_reference', id }] });
      /** [the body naming acme's id, acme's id, a fresh id of the same form]. */
      const cases: [(id: string) => Record<string, unknown>, string, string][] = [
        [(id) => ({ previous_response_id: id }), acmeIds.response, ghostResponse],
        [(id) => ({ conversation: id }), acmeIds.conversation, ghostConversation],
        [reference, acmeIds.outputItem, 'msg_ghost'],
        [reference, acmeIds.conversationItem, 'msg_ghost'],
      ];
      for (const [body, theirs, missing] of cases) {
        const denied = await respond(body(theirs));
        const absent = await respond(body(missing));
        expect([denied.status, absent.status]).toEqual([404, 404]);
        expect(denied.text.replaceAll(theirs, '<id>')).toBe(absent.text.replaceAll(missing, '<id>'));
      }
    });

    it('another entity\'s stored completions and responses are in none of its lists or exports', async () => {
      const listed = (await call('GET', '/v1/chat/completions?metadata[secret]=acme', globex)).json as { data: unknown[] };
      expect(listed.data).toEqual([]);
      const afterTheirs = await call('GET', `/v1/chat/completions?after=${acmeIds.chatCompletion}`, globex);
      const afterNone = await call('GET', `/v1/chat/completions?after=${ghostChatCompletion}`, globex);
      expect([afterTheirs.status, afterNone.status]).toEqual([400, 400]);
      expect(afterTheirs.text.replaceAll(acmeIds.chatCompletion, '<id>')).toBe(afterNone.text.replaceAll(ghostChatCompletion, '<id>'));
      for (const [path, id] of [['/v1/chat/completions/export', acmeIds.chatCompletion], ['/v1/responses/export', acmeIds.response]]) {
        for (const body of [{ ids: [id] }, { metadata: { secret: 'acme' } }, {}]) {
          const art = await call('POST', path, globex, { format: 'art', ...body });
          expect(art.status).toBe(200);
          expect(art.json).toEqual({ object: 'trajectory_groups.export', trajectory_groups: [], skipped: [] });
          const sft = await call('POST', path, globex, { format: 'sft', ...body });
          expect([sft.status, sft.text]).toEqual([200, '']);
        }
      }
    });

    it('another entity\'s model can be neither listed, nor served, nor created into, nor used as a KL reference', async () => {
      const listed = (await call('GET', '/v1/models', globex)).json as { data: { id: string }[] };
      expect(listed.data.map((m) => m.id)).not.toContain('wandb-artifact:///acme/secret-project/crown-jewels');
      for (const model of ['wandb-artifact:///acme/secret-project/crown-jewels', 'acme/secret-project/crown-jewels:step0', 'wandb-artifact:///acme/secret-project/crown-jewels:latest']) {
        const chat = await call('POST', '/v1/chat/completions', globex, { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
        expect(chat.status).toBe(404);
        expect((chat.json as { error: { code: string } }).error.code).toBe('model_not_found');
      }
      const create = await call('POST', '/v1/preview/models', globex, { entity: 'acme', project: 'secret-project', name: 'crown-jewels', base_model: BASE, return_existing: true });
      expect(create.status).toBe(403);
      const files = (await call('GET', '/v1/files', globex)).json as { data: { id: string }[] };
      expect(files.data.map((f) => f.id)).not.toContain(acmeIds.file);

      const validGroups = [{ trajectories: [0, 1].map((reward) => ({ reward, messages_and_choices: [{ role: 'user', content: 'hi' }, { message: { role: 'assistant', content: 'x' }, token_ids: [5, 6], logprobs: { content: [5, 6].map((token_id) => ({ token_id, logprob: -1 })) } }] })) }];
      for (const reference of ['wandb-artifact:///acme/secret-project/crown-jewels:step0', join(stack.artifactsDir, 'adapters', acmeIds.model), '/etc/passwd', '../../../../etc']) {
        const job = await call('POST', '/v1/preview/training-jobs', globex, { model_id: globexModel, trajectory_groups: validGroups, experimental_config: { kl_ref_adapter_path: reference } });
        expect(job.status).toBe(422);
        expect(job.text).toContain('kl_ref_adapter_path must name a checkpoint of one of your models');
      }
    });

    it('a KL reference to one of the caller\'s own checkpoints is still accepted, and trains', async () => {
      const groups = [{ trajectories: [0, 1].map((reward) => ({ reward, messages_and_choices: [{ role: 'user', content: 'hi' }, { message: { role: 'assistant', content: 'x' }, token_ids: [5, 6] }] })) }];
      const created = await call('POST', '/v1/preview/training-jobs', globex, {
        model_id: globexModel,
        trajectory_groups: groups,
        experimental_config: { kl_ref_adapter_path: 'wandb-artifact:///globex/p/own:step0', kl_penalty_coef: 0.1, allow_training_without_logprobs: true },
      });
      expect(created.status).toBe(200);
      const id = (created.json as { id: string }).id;
      const job = await waitFor(
        async () => {
          const record = (await call('GET', `/v1/preview/training-jobs/${id}`, globex)).json as TrainingJobRecord;
          return ['succeeded', 'failed', 'cancelled'].includes(record.status) && record;
        },
        { what: 'the job to end', timeoutMs: 240_000, intervalMs: 500 },
      );
      expect(job).toMatchObject({ status: 'succeeded', error_message: null });
    }, 300_000);

    it('leaves the owner\'s data as it was', async () => {
      expect((await call('GET', `/v1/preview/models/${acmeIds.model}/checkpoints`, acme)).status).toBe(200);
      expect((await call('GET', `/v1/files/${acmeIds.file}/content`, acme)).text).toBe(DATASET);
      expect(((await call('GET', `/v1/preview/training-jobs/${acmeIds.job}`, acme)).json as { id: string }).id).toBe(acmeIds.job);
      expect(((await call('GET', `/v1/fine_tuning/jobs/${acmeIds.fineTuningJob}`, acme)).json as { id: string }).id).toBe(acmeIds.fineTuningJob);
      expect(((await call('GET', `/v1/responses/${acmeIds.response}`, acme)).json as { id: string }).id).toBe(acmeIds.response);
      const completion = (await call('GET', `/v1/chat/completions/${acmeIds.chatCompletion}`, acme)).json as { id: string; metadata: unknown };
      expect(completion).toMatchObject({ id: acmeIds.chatCompletion, metadata: { secret: 'acme', reward: '1' } });
      const exported = (await call('POST', '/v1/chat/completions/export', acme, { format: 'art', ids: [acmeIds.chatCompletion] })).json as { trajectory_groups: unknown[] };
      expect(exported.trajectory_groups).toHaveLength(1);
      const items = (await call('GET', `/v1/conversations/${acmeIds.conversation}/items`, acme)).json as { data: { id: string; content: { text: string }[] }[] };
      expect(items.data.map((item) => [item.id, item.content[0].text])).toEqual([[acmeIds.conversationItem, 'acme secret']]);
      expect(((await call('GET', `/v1/conversations/${acmeIds.conversation}`, acme)).json as { metadata: unknown }).metadata).toEqual({});
    });
  });

  describe('uploads', () => {
    const NAMES = [
      '../../../../../../tmp/trainyard-escape-{tag}.jsonl',
      '/tmp/trainyard-escape-{tag}.jsonl',
      '..\\..\\..\\trainyard-escape-{tag}.jsonl',
      'files/../../trainyard-escape-{tag}.jsonl',
      '....//....//trainyard-escape-{tag}.jsonl',
      '%2e%2e%2f%2e%2e%2ftrainyard-escape-{tag}.jsonl',
      '.staging/../../trainyard-escape-{tag}',
      '\u202elsonj.{tag}.exe',
    ];

    it('cannot leave the artifact root, whatever their name: stored by the digest of their content, the name only a label without a path', async () => {
      const tag = randomUUID().slice(0, 8);
      const parent = dirname(stack.artifactsDir);
      const outsideBefore = readdirSync(parent).filter((n) => n.includes(tag));
      const before = Object.keys(filesUnder(stack.artifactsDir));
      for (const template of NAMES) {
        const filename = template.replace('{tag}', tag);
        const answer = await upload(acme, filename, `{"n":${JSON.stringify(filename)}}`);
        expect(answer.status).toBe(200);
        const file = answer.json as { id: string; filename: string };
        expect(file.id).toMatch(/^file-[A-Za-z0-9]{24}$/);
        expect(filename.endsWith(file.filename)).toBe(true);
        expect(file.filename).not.toMatch(/[/\\]/);
        const content = await call('GET', `/v1/files/${file.id}/content`, acme);
        expect(content.text).toBe(`{"n":${JSON.stringify(filename)}}`);
        // The name comes back in the download header only as a label: ASCII, quoted, and exactly in filename*.
        const disposition = String(content.headers['content-disposition']);
        expect(disposition).toMatch(/^attachment; filename="[\x20-\x7e]*"; filename\*=UTF-8''[^\s"]*$/);
        expect(decodeURIComponent(disposition.split("filename*=UTF-8''")[1])).toBe(file.filename);
      }
      const added = Object.keys(filesUnder(stack.artifactsDir)).filter((p) => !before.includes(p));
      expect(added).toHaveLength(NAMES.length);
      // Stored by the digest of their content: no part of a name reaches a path.
      for (const path of added) expect(path).toMatch(/^objects\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}$/);
      expect(readdirSync(parent).filter((n) => n.includes(tag))).toEqual(outsideBefore);
      expect(existsSync(`/tmp/trainyard-escape-${tag}.jsonl`)).toBe(false);
    });

    it('named only "..", "." or a directory leave nothing to name: refused as no file at all', async () => {
      for (const filename of ['..', '.', '../', 'a/b/']) {
        const answer = await upload(acme, filename);
        expect(answer.status).toBe(400);
        expect((answer.json as { error: { param: string } }).error.param).toBe('file');
      }
    });

    it('with control characters in the name are refused (they would end up in headers and logs)', async () => {
      for (const encoded of ['a%00b.jsonl', 'x%0D%0ASet-Cookie%3A%20a%3Db', '%1B%5B31mred', 'tab%09name', 'del%7F']) {
        const { body, contentType } = multipart([
          { name: 'purpose', data: 'fine-tune' },
          { name: 'file', disposition: `form-data; name="file"; filename*=UTF-8''${encoded}`, data: DATASET },
        ]);
        const answer = await send(stack.baseUrl, { method: 'POST', path: '/v1/files', key: acme, body, headers: { 'content-type': contentType } });
        expect(answer.status).toBe(400);
        expect((answer.json as { error: { param: string } }).error.param).toBe('file.filename');
      }
    });
  });

  describe('logs', () => {
    const allLogs = () => APPS.map((app) => stack.readLog(app)).join('\n');

    it('carry the request id of every request, with method, path and status, and never a secret', async () => {
      const tag = randomUUID().slice(0, 8);
      const requests: [string, string, string | undefined, number][] = [
        ['GET', '/v1/models', acme, 200],
        ['GET', `/v1/preview/models/${acmeIds.model}/checkpoints`, acme, 200],
        ['GET', `/v1/files/${acmeIds.file}`, globex, 404],
        ['GET', '/v1/models', `${acme}-wrong`, 401],
        ['GET', '/v1/no-such-route', acme, 404],
        // A key put in the URL (some clients do) must not be copied into the logs either.
        ['GET', `/v1/models?api_key=${acme}&key=${globex}`, acme, 200],
      ];
      secrets.push(`${acme}-wrong`);
      for (const [index, [method, path, key, status]] of requests.entries()) {
        const answer = await send(stack.baseUrl, { method, path, key, headers: { 'x-request-id': `sec-${tag}-${index}` } });
        expect(answer.status).toBe(status);
        expect(answer.headers['x-request-id']).toBe(`sec-${tag}-${index}`);
      }
      // A chat completion travels through chat and a worker: its request id goes with it.
      await send(stack.baseUrl, {
        method: 'POST',
        path: '/v1/chat/completions',
        key: acme,
        headers: { 'x-request-id': `sec-${tag}-chat`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: BASE, messages: [{ role: 'user', content: `the password is ${globex}` }], max_tokens: 1 }),
      });

      const gatewayLines = await waitFor(
        async () => {
          const lines = stack.readLog('gateway').split('\n').filter((l) => l.includes(`request_id=sec-${tag}-`));
          return lines.length >= requests.length + 1 && lines;
        },
        { what: 'the request log lines', timeoutMs: 10_000 },
      );
      for (const [index, [method, path, , status]] of requests.entries()) {
        const line = gatewayLines.find((l) => l.includes(`request_id=sec-${tag}-${index} `));
        expect(line).toBeDefined();
        expect(line).toContain(`${method} ${path.split('?')[0]} ${status} `);
      }
      const keyId = (await stack.withDatabase((db) => db.query<{ id: string }>('SELECT id FROM api_keys WHERE hash = $1', [sha256(acme)]))).rows[0].id;
      expect(gatewayLines.find((l) => l.includes(`request_id=sec-${tag}-0 `))).toContain(`key=${keyId}`);

      const logs = allLogs();
      expect(logs.length).toBeGreaterThan(0);
      expectNoSecretIn(logs);
    });
  });
});
