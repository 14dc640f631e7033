import type { Page, TrainingEventRecord, TrainingJobRecord } from '@trainyard/contracts';
import { createHash } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { JsonReply, Stack } from './support/stack';

// ART's training API as its clients send it: SFT through a W&B artifact (the newer body with
// config.assistant_turns, the older one with training_folder_url), keys a newer client may
// send, and the guard on every URL the service fetches for a caller. W&B is a small server
// in this test speaking the wandb SDK's GraphQL queries and serving the artifact's manifest
// and file; it listens on 127.0.0.1, which the stack reaches only because
// SFT_DATA_ALLOWED_HOSTS allows exactly that address.

const BASE = 'trainyard/tiny-chat';
const WANDB_KEY = 'wandb-test-key-0123456789';

interface GraphqlCall {
  operation: string;
  variables: Record<string, unknown>;
  authorization: string | undefined;
}

interface FakeArtifact {
  id: string;
  versionIndex: number;
  files: Record<string, string>;
  /** Served instead of the file's content, to test the digest check. */
  tampered?: string;
}

/** The part of the W&B public API that the wandb SDK's artifact download uses. */
class FakeWandb {
  readonly calls: GraphqlCall[] = [];
  readonly downloads: string[] = [];
  /** `${entity}/${project}/${collection}` -> versions, index = versionIndex. */
  private readonly collections = new Map<string, FakeArtifact[]>();
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Logs a new version of an artifact, as `run.log_artifact` would. */
  add(entity: string, project: string, collection: string, files: Record<string, string>, tampered?: string): FakeArtifact {
    const versions = this.collections.get(`${entity}/${project}/${collection}`) ?? [];
    const artifact = { id: Buffer.from(`Artifact:${collection}:${versions.length}`).toString('base64'), versionIndex: versions.length, files, tampered };
    versions.push(artifact);
    this.collections.set(`${entity}/${project}/${collection}`, versions);
    return artifact;
  }

  private find(entity: string, project: string, collection: string, alias: string): FakeArtifact | undefined {
    const versions = this.collections.get(`${entity}/${project}/${collection}`) ?? [];
    if (alias === 'latest') return versions.at(-1);
    const m = /^v(\d+)$/.exec(alias);
    return m ? versions[Number(m[1])] : undefined;
  }

  private byId(id: string): FakeArtifact | undefined {
    return [...this.collections.values()].flat().find((a) => a.id === id);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (req.method === 'POST' && req.url === '/graphql') {
      const { query, variables } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { query: string; variables: Record<string, string> };
      const operation = /^\s*query\s+(\w+)/.exec(query)?.[1] ?? '';
      this.calls.push({ operation, variables, authorization: req.headers.authorization });
      if (req.headers.authorization !== `Basic ${Buffer.from(`api:${WANDB_KEY}`).toString('base64')}`) return json(401, { errors: [{ message: 'user is not logged in' }] });
      const { entity, project } = variables;
      if (operation === 'ArtifactMembershipByName') {
        const [collection, alias] = variables['name'].split(':');
        const a = this.find(entity, project, collection, alias);
        const membership = a && { id: `membership-${a.id}`, versionIndex: a.versionIndex, artifactCollection: { name: collection }, artifact: { id: a.id, state: 'COMMITTED' } };
        return json(200, { data: { project: { artifactCollectionMembership: membership ?? null } } });
      }
      if (operation === 'FetchArtifactManifest') {
        const a = this.byId(variables['id']);
        return json(200, { data: { artifact: a ? { currentManifest: { file: { directUrl: `${this.url}/storage/manifest/${encodeURIComponent(a.id)}` } } } : null } });
      }
      if (operation === 'GetArtifactMembershipFileUrls') {
        const a = this.find(entity, project, variables['collection'], variables['alias']);
        const edges = Object.keys(a?.files ?? {}).map((name) => ({ node: { name, directUrl: `${this.url}/storage/file/${encodeURIComponent(a?.id ?? '')}/${name}` } }));
        return json(200, { data: { project: { artifactCollection: { artifactMembership: a ? { files: { pageInfo: { endCursor: null, hasNextPage: false }, edges } } : null } } } });
      }
      return json(400, { errors: [{ message: `unknown operation ${operation}` }] });
    }
    const manifest = /^\/storage\/manifest\/([^/]+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && manifest) {
      const a = this.byId(decodeURIComponent(manifest[1]));
      if (!a) return json(404, {});
      const contents = Object.fromEntries(
        Object.entries(a.files).map(([name, text]) => [name, { digest: createHash('md5').update(text).digest('base64'), size: Buffer.byteLength(text), birthArtifactID: a.id }]),
      );
      return json(200, { version: 1, storagePolicy: 'wandb-storage-policy-v1', storagePolicyConfig: { storageLayout: 'V2' }, contents });
    }
    const file = /^\/storage\/file\/([^/]+)\/(.+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && file) {
      const a = this.byId(decodeURIComponent(file[1]));
      const text = a?.files[file[2]];
      if (!a || text === undefined) return json(404, {});
      this.downloads.push(file[2]);
      return void res.end(a.tampered ?? text);
    }
    json(404, {});
  }
}

const conversation = (q: string) =>
  JSON.stringify({
    messages: [
      { role: 'user', content: q },
      { role: 'assistant', content: 'I can answer that in a moment, first a question.' },
      { role: 'user', content: 'go on' },
      { role: 'assistant', content: 'ok' },
    ],
  });
const JSONL = ['Say hi.', 'Say bye.', 'Say yes.'].map(conversation).join('\n') + '\n';

describe('ART training API: SFT fields, W&B artifacts, forward compatibility, fetched URLs', () => {
  let stack: Stack;
  let wandb: FakeWandb;
  let key: string;
  let model: { id: string; entity: string; project: string; name: string };
  const servers: Server[] = [];

  beforeAll(async () => {
    wandb = new FakeWandb();
    await wandb.start();
    stack = await Stack.start({
      env: { SFT_DATA_ALLOWED_HOSTS: '127.0.0.1', WANDB_BASE_URL: wandb.url, WANDB_API_KEY: WANDB_KEY, MAX_COMPLETION_TOKENS: '16' },
    });
    stack.addTinyModel(BASE);
    key = (await stack.createKey('acme')).key;
    model = await stack.json('POST', '/v1/preview/models', key, { entity: null, project: 'art', name: 'sft', base_model: BASE, return_existing: true });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await wandb?.stop();
    for (const s of servers) s.close();
  }, 60_000);

  const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<JsonReply<T>> => stack.call<T>(method, path, { key, body });

  async function waitForEnd(jobId: string): Promise<TrainingEventRecord[]> {
    const events: TrainingEventRecord[] = [];
    for (let i = 0; i < 600; i++) {
      const after = events.at(-1)?.id;
      const { body } = await call<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${jobId}/events${after ? `?after=${after}` : ''}`);
      events.push(...body.data);
      if (events.some((e) => e.type === 'training_ended' || e.type === 'training_failed')) return events;
      if (!body.has_more) await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`job ${jobId} did not end; events: ${JSON.stringify(events)}`);
  }

  const trainableTokens = (events: TrainingEventRecord[]) =>
    events.filter((e) => e.type === 'gradient_step').reduce((sum, e) => sum + Number(e.data['num_trainable_tokens']), 0);

  /** A server on an address of our choosing that records every request it gets. */
  async function listen(host: string, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ port: number; hits: string[] }> {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(req.url ?? '');
      handler(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    servers.push(server);
    return { port: (server.address() as AddressInfo).port, hits };
  }

  it('trains from a W&B artifact as newer ART sends it, assistant_turns deciding which turns carry loss', async () => {
    // ART's train_sft: the JSONL logged as artifact "{model}-sft-data-{id}" with file train.jsonl, then
    // {model_id, training_data_url: "wandb-artifact:///{entity}/{project}/{name}:v0", config}.
    wandb.add(model.entity, model.project, 'sft-sft-data-1a2b3c4d5e6f', { 'train.jsonl': JSONL });
    const url = `wandb-artifact:///${model.entity}/${model.project}/sft-sft-data-1a2b3c4d5e6f:v0`;
    const callsBefore = wandb.calls.length;

    const all = await call<{ id: string }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: url, config: { learning_rate: 1e-3, assistant_turns: 'all' } });
    expect(all.status).toBe(200);
    const allEvents = await waitForEnd(all.body.id);
    expect(allEvents.at(-1)?.type).toBe('training_ended');

    const calls = wandb.calls.slice(callsBefore);
    expect(calls.map((c) => c.operation)).toEqual(['ArtifactMembershipByName', 'FetchArtifactManifest', 'GetArtifactMembershipFileUrls']);
    expect(calls[0].variables).toEqual({ entity: model.entity, project: model.project, name: 'sft-sft-data-1a2b3c4d5e6f:v0' });
    expect(calls[2].variables).toMatchObject({ entity: model.entity, project: model.project, collection: 'sft-sft-data-1a2b3c4d5e6f', alias: 'v0' });
    expect(wandb.downloads.at(-1)).toBe('train.jsonl');

    const last = await call<{ id: string }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: url, config: { learning_rate: 1e-3, assistant_turns: 'last' } });
    expect(last.status).toBe(200);
    const lastEvents = await waitForEnd(last.body.id);
    expect(lastEvents.at(-1)?.type).toBe('training_ended');
    // Same conversations and batches; only the last assistant turn of each is trained.
    expect(lastEvents.filter((e) => e.type === 'gradient_step')).toHaveLength(allEvents.filter((e) => e.type === 'gradient_step').length);
    expect(trainableTokens(lastEvents)).toBeGreaterThan(0);
    expect(trainableTokens(lastEvents)).toBeLessThan(trainableTokens(allEvents));

    const record = await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${last.body.id}`);
    expect(record.body).toMatchObject({ type: 'sft', status: 'succeeded', ignored_config_keys: [] });

    const bad = await call<{ detail: { loc: string[]; msg: string }[] }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: url, config: { assistant_turns: 'first' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'config', 'assistant_turns'], msg: expect.stringContaining('"last"') });
  }, 300_000);

  it('takes the older body: training_folder_url, config without assistant_turns', async () => {
    wandb.add(model.entity, model.project, 'sft-sft-data-00aa11bb22cc', { 'train.jsonl': JSONL });
    const before = (await call<Page<{ step: number }>>('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`)).body.data[0].step;
    const job = await call<{ id: string }>('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_folder_url: `wandb-artifact:///${model.entity}/${model.project}/sft-sft-data-00aa11bb22cc:v0`,
      config: { batch_size: 2, learning_rate: 1e-3 },
    });
    expect(job.status).toBe(200);
    const events = await waitForEnd(job.body.id);
    expect(events[0]).toMatchObject({ type: 'training_started', data: { num_sequences: 2 } });
    expect(events.at(-1)?.type).toBe('training_ended');
    expect((await call<Page<{ step: number }>>('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`)).body.data[0].step).toBe(before + 1);

    const clash = await call<{ detail: { loc: string[] }[] }>('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_data_url: 'file-abc',
      training_folder_url: 'file-def',
    });
    expect(clash.status).toBe(422);
    expect(clash.body.detail[0].loc).toEqual(['body', 'training_folder_url']);
    const neither = await call<{ detail: { loc: string[] }[] }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id });
    expect(neither.status).toBe(422);
    expect(neither.body.detail[0].loc).toEqual(['body', 'training_data_url']);
  }, 300_000);

  it('resolves only artifacts that exist and arrive intact', async () => {
    const missing = await call<{ detail: string }>('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_data_url: `wandb-artifact:///${model.entity}/${model.project}/no-such-artifact:v0`,
    });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toMatch(/W&B artifact .*no-such-artifact:v0 was not found/);

    wandb.add(model.entity, model.project, 'tampered', { 'train.jsonl': JSONL }, JSONL.replace('Say hi.', 'Say HI.'));
    const tampered = await call<{ detail: string }>('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_data_url: `wandb-artifact:///${model.entity}/${model.project}/tampered:latest`,
    });
    expect(tampered.status).toBe(400);
    expect(tampered.body.detail).toMatch(/could not be fetched/);
  }, 60_000);

  it('accepts config keys it does not know, lists them on the job and its training_started event, and still refuses known unimplemented ones', async () => {
    const form = new FormData();
    form.append('purpose', 'fine-tune');
    form.append('file', new Blob([JSONL]), 'data.jsonl');
    const file = (await (await stack.fetch('/v1/files', { method: 'POST', key, body: form })).json()) as { id: string };

    const sft = await call<{ id: string }>('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_data_url: file.id,
      config: { batch_size: 3, learning_rate: 1e-3, assistant_turns: 'all', packing: 'greedy', epochs: 2 },
      experimental_config: { future_knob: true },
    });
    expect(sft.status).toBe(200);
    const expected = ['config.packing', 'config.epochs', 'experimental_config.future_knob'];
    expect((await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${sft.body.id}`)).body.ignored_config_keys).toEqual(expected);
    const events = await waitForEnd(sft.body.id);
    expect(events[0]).toMatchObject({ type: 'training_started', data: { num_sequences: 1, ignored_config_keys: expected } });
    expect(events.at(-1)?.type).toBe('training_ended');

    const misplaced = await call<{ detail: { loc: string[] }[] }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: file.id, experimental_config: { learning_rate: 1e-3 } });
    expect(misplaced.status).toBe(422);
    expect(misplaced.body.detail[0].loc).toEqual(['body', 'experimental_config', 'learning_rate']);

    // RL: an unknown experimental_config key is listed; plot_tensors (known, not implemented) is still a 422.
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'Name a colour.' }];
    const trajectories = [];
    for (const reward of [0, 1]) {
      const completion = await client.chat.completions.create({
        model: `wandb-artifact:///${model.entity}/${model.project}/${model.name}`,
        messages,
        max_tokens: 8,
        logprobs: true,
        // @ts-expect-error ART's extension, sent as an extra body field
        return_token_ids: true,
      });
      trajectories.push({ messages_and_choices: [...messages, completion.choices[0]], reward });
    }
    const rl = await call<{ id: string }>('POST', '/v1/preview/training-jobs', {
      model_id: model.id,
      trajectory_groups: [{ trajectories }],
      experimental_config: { learning_rate: 1e-4, loss_fn: 'cispo', dynamic_sampling: 'off' },
    });
    expect(rl.status).toBe(200);
    expect((await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${rl.body.id}`)).body.ignored_config_keys).toEqual(['experimental_config.dynamic_sampling']);
    const rlEvents = await waitForEnd(rl.body.id);
    expect(rlEvents[0]).toMatchObject({ type: 'training_started', data: { ignored_config_keys: ['experimental_config.dynamic_sampling'] } });
    expect(rlEvents.at(-1)?.type).toBe('training_ended');

    const unimplemented = await call<{ detail: { loc: string[]; msg: string }[] }>('POST', '/v1/preview/training-jobs', {
      model_id: model.id,
      trajectory_groups: [{ trajectories }],
      experimental_config: { plot_tensors: true, another_new_key: 1 },
    });
    expect(unimplemented.status).toBe(422);
    expect(unimplemented.body.detail.map((d) => d.loc)).toEqual([['body', 'experimental_config', 'plot_tensors']]);
  }, 300_000);

  it('never fetches inside the network for a caller, answering every refused or failed fetch alike', async () => {
    // A server on another loopback address, not on the allow list: nothing may reach it.
    const secret = await listen('127.0.0.2', (_, res) => res.end('{"messages": []}'));
    // An allowed server that redirects wherever the path says.
    const redirector = await listen('127.0.0.1', (req, res) => res.writeHead(302, { location: decodeURIComponent((req.url ?? '/').slice(1)) }).end());
    const via = (target: string) => `http://127.0.0.1:${redirector.port}/${encodeURIComponent(target)}`;

    const urls = [
      `http://127.0.0.2:${secret.port}/data.jsonl`,
      'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      'http://10.0.0.1/data.jsonl',
      `http://[::1]:${secret.port}/data.jsonl`,
      `http://[::ffff:127.0.0.2]:${secret.port}/data.jsonl`,
      via(`http://127.0.0.2:${secret.port}/data.jsonl`),
      via('http://169.254.169.254/latest/meta-data/'),
      via('file:///etc/passwd'),
      // Allowed, but nothing listens there: a failure, reported the same way as a refusal.
      'http://127.0.0.1:9/data.jsonl',
    ];
    const details = new Set<string>();
    for (const url of urls) {
      const reply = await call<{ detail: string }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: url });
      expect(reply.status).toBe(400);
      details.add(reply.body.detail.replace(url, '<url>'));
    }
    expect([...details]).toEqual([expect.stringMatching(/^training_data_url <url> could not be fetched\./)]);
    expect(secret.hits).toEqual([]);
    expect(redirector.hits).toHaveLength(3);
  }, 60_000);
});
