import { ChatCompletionObject, ResponseObject, ServedTrace, ServiceError } from '@trainyard/contracts';
import { PrismaService } from '@trainyard/db';
import { ExpiredStateSweeper } from '../src/stored-responses/expired-state.sweeper';
import { StoredCompletionsService } from '../src/stored-responses/stored-completions.service';
import { StoredResponsesService } from '../src/stored-responses/stored-responses.service';
import { TrafficExportService } from '../src/stored-responses/traffic-export.service';
import { startStoredStateFixture, StoredStateFixture } from './support/stored-state-fixture';

const DAY_MS = 24 * 60 * 60 * 1000;

describe('stored chat completions and their export against real Postgres', () => {
  let fixture: StoredStateFixture;
  let prisma: PrismaService;
  let completions: StoredCompletionsService;
  let responses: StoredResponsesService;
  let exports: TrafficExportService;
  let sweeper: ExpiredStateSweeper;
  let acme: string;
  let globex: string;
  let serial = 0;

  beforeAll(async () => {
    fixture = await startStoredStateFixture();
    ({ prisma, acme, globex } = fixture);
    completions = fixture.moduleRef.get(StoredCompletionsService);
    responses = fixture.moduleRef.get(StoredResponsesService);
    exports = fixture.moduleRef.get(TrafficExportService);
    sweeper = fixture.moduleRef.get(ExpiredStateSweeper);
  });

  afterAll(() => fixture?.close());

  const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (err: unknown) => err as ServiceError);
  const trace = (text: string): ServedTrace => ({
    base_model: 'tiny',
    model_id: null,
    checkpoint_step: null,
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: `ask ${text}` },
    ],
    tools: null,
    prompt_token_ids: [1, 2, 3],
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop', token_ids: [7, 8], logprobs: [{ token_id: 7, token: 'a', logprob: -1 }, { token_id: 8, token: 'b', logprob: -2 }] }],
  });

  async function store(entity: string, metadata: Record<string, string>, model = 'tiny'): Promise<ChatCompletionObject> {
    const completion: ChatCompletionObject = { id: `chatcmpl-${String(++serial).padStart(8, '0')}`, object: 'chat.completion', created: 1, model, choices: [] };
    await completions.store({ entity_id: entity, completion, metadata, trace: trace(`answer ${serial}`) });
    return completion;
  }

  it('keeps a completion, read back with its metadata, and its request messages by id', async () => {
    const completion = await store(acme, { task: 'hello' });
    expect(await completions.get({ entity_id: acme, completion_id: completion.id })).toEqual({ ...completion, metadata: { task: 'hello' } });
    const messages = await completions.messages({ entity_id: acme, completion_id: completion.id, limit: 20, order: 'asc' });
    expect(messages).toMatchObject({ object: 'list', first_id: `${completion.id}-0`, last_id: `${completion.id}-1`, has_more: false });
    expect(messages.data[1]).toEqual({ id: `${completion.id}-1`, role: 'user', content: expect.stringMatching(/^ask/), content_parts: null });
    const page = await completions.messages({ entity_id: acme, completion_id: completion.id, limit: 1, order: 'desc' });
    expect(page).toMatchObject({ data: [{ id: `${completion.id}-1` }], has_more: true });
    expect(await completions.messages({ entity_id: acme, completion_id: completion.id, limit: 5, order: 'desc', after: `${completion.id}-1` })).toMatchObject({ data: [{ id: `${completion.id}-0` }], has_more: false });
  });

  it('lists by metadata pairs and model, pages after an id in either order', async () => {
    const a = await store(acme, { run: 'list', n: '1' });
    const b = await store(acme, { run: 'list', n: '2' }, 'other');
    const c = await store(acme, { run: 'list', n: '3' });
    await store(globex, { run: 'list', n: '4' });
    const list = (query: Partial<Parameters<StoredCompletionsService['list']>[0]>) =>
      completions.list({ entity_id: acme, limit: 20, order: 'asc', metadata: { run: 'list' }, ...query });
    expect((await list({})).data.map((x) => x.id)).toEqual([a.id, b.id, c.id]);
    expect((await list({ metadata: { run: 'list', n: '2' } })).data.map((x) => x.id)).toEqual([b.id]);
    expect((await list({ model: 'tiny' })).data.map((x) => x.id)).toEqual([a.id, c.id]);
    expect(await list({ limit: 2 })).toMatchObject({ first_id: a.id, last_id: b.id, has_more: true });
    expect((await list({ after: b.id })).data.map((x) => x.id)).toEqual([c.id]);
    expect((await list({ order: 'desc', after: b.id })).data.map((x) => x.id)).toEqual([a.id]);
    expect((await failure(list({ after: 'chatcmpl-nope' })))?.details.param).toBe('after');
  });

  it('pages large completions within one NATS reply, saying there are more', async () => {
    const big = 'x'.repeat(300 * 1024);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const completion: ChatCompletionObject = { id: `chatcmpl-big${i}`, object: 'chat.completion', created: 1, model: 'tiny', choices: [{ message: { content: big } }] };
      await completions.store({ entity_id: acme, completion, metadata: { size: 'big' }, trace: trace('big') });
      ids.push(completion.id);
    }
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await completions.list({ entity_id: acme, limit: 20, order: 'asc', metadata: { size: 'big' }, after });
      expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThan(1024 * 1024);
      seen.push(...page.data.map((c) => c.id));
      if (!page.has_more) break;
      after = page.last_id ?? undefined;
    }
    expect(seen).toEqual(ids);
  });

  it('sets metadata, and deletes for good', async () => {
    const completion = await store(acme, { reward: '0' });
    expect((await completions.update({ entity_id: acme, completion_id: completion.id, metadata: { reward: '1' } })).metadata).toEqual({ reward: '1' });
    expect((await completions.get({ entity_id: acme, completion_id: completion.id })).metadata).toEqual({ reward: '1' });
    expect(await completions.delete({ entity_id: acme, completion_id: completion.id })).toEqual({ id: completion.id, object: 'chat.completion.deleted', deleted: true });
    expect(await prisma.storedChatCompletion.count({ where: { id: completion.id } })).toBe(0);
    expect((await failure(completions.delete({ entity_id: acme, completion_id: completion.id })))?.code).toBe('not_found');
  });

  it("answers another entity's completion as if it did not exist, for every operation", async () => {
    const completion = await store(acme, { secret: 'yes' });
    const theirs = { entity_id: globex, completion_id: completion.id };
    expect((await failure(completions.get(theirs)))?.code).toBe('not_found');
    expect((await failure(completions.messages({ ...theirs, limit: 20, order: 'asc' })))?.code).toBe('not_found');
    expect((await failure(completions.update({ ...theirs, metadata: {} })))?.code).toBe('not_found');
    expect((await failure(completions.delete(theirs)))?.code).toBe('not_found');
    expect((await completions.list({ entity_id: globex, limit: 100, order: 'asc', metadata: { secret: 'yes' } })).data).toEqual([]);
    expect((await exports.page({ entity_id: globex, source: 'chat_completions', filter: { ids: [completion.id] }, after: null, max_bytes: 1 << 20 })).records).toEqual([]);
    expect((await completions.get({ entity_id: acme, completion_id: completion.id })).metadata).toEqual({ secret: 'yes' });
  });

  it('exports by filter in pages under the byte budget, with the traces, and nothing twice', async () => {
    const stored = [await store(acme, { batch: 'export' }), await store(acme, { batch: 'export' }), await store(acme, { batch: 'export' })];
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<TrafficExportService['page']>> = await exports.page({ entity_id: acme, source: 'chat_completions', filter: { metadata: { batch: 'export' } }, after, max_bytes: 10 });
      pages += 1;
      seen.push(...page.records.map((r) => r.id));
      expect(page.records[0].trace?.choices[0].token_ids).toEqual([7, 8]);
      after = page.next;
    } while (after !== null);
    // A budget smaller than one record still moves on, one record per page.
    expect(seen).toEqual(stored.map((c) => c.id));
    expect(pages).toBe(3);
    const byIds = await exports.page({ entity_id: acme, source: 'chat_completions', filter: { ids: [stored[1].id, 'not an id!'] }, after: null, max_bytes: 1 << 20 });
    expect(byIds).toEqual({ records: [expect.objectContaining({ id: stored[1].id, object: 'chat.completion', metadata: { batch: 'export' } })], next: null });
    const now = Math.floor(Date.now() / 1000);
    expect((await exports.page({ entity_id: acme, source: 'chat_completions', filter: { metadata: { batch: 'export' }, created_before: now - 3600 }, after: null, max_bytes: 1 << 20 })).records).toEqual([]);
    expect((await exports.page({ entity_id: acme, source: 'chat_completions', filter: { metadata: { batch: 'export' }, created_after: now - 3600 }, after: null, max_bytes: 1 << 20 })).records).toHaveLength(3);
  });

  it('exports stored responses with their model, metadata and trace', async () => {
    const response: ResponseObject = { id: 'resp_export0000000000000000000000001', object: 'response', model: 'tiny', metadata: { batch: 'responses' }, output: [] };
    await responses.store({ entity_id: acme, stored: { response, input_items: [], trace: trace('from a response') }, conversation: null });
    const page = await exports.page({ entity_id: acme, source: 'responses', filter: { metadata: { batch: 'responses' }, model: 'tiny' }, after: null, max_bytes: 1 << 20 });
    expect(page.records).toEqual([{ id: response.id, object: 'response', created_at: expect.any(Number), model: 'tiny', metadata: { batch: 'responses' }, trace: trace('from a response') }]);
    expect((await responses.get({ entity_id: acme, response_id: response.id })).id).toBe(response.id);
  });

  it('hides completions past the retention at once, and the sweep deletes them', async () => {
    const old = await store(acme, { age: 'old' });
    await prisma.storedChatCompletion.update({ where: { id: old.id }, data: { createdAt: new Date(Date.now() - 31 * DAY_MS) } });
    expect((await failure(completions.get({ entity_id: acme, completion_id: old.id })))?.code).toBe('not_found');
    expect((await exports.page({ entity_id: acme, source: 'chat_completions', filter: { metadata: { age: 'old' } }, after: null, max_bytes: 1 << 20 })).records).toEqual([]);
    expect((await sweeper.sweep()).completions).toBe(1);
    expect(await prisma.storedChatCompletion.count({ where: { id: old.id } })).toBe(0);
  });
});
