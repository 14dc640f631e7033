import { ResponseItem, ResponseObject, ServiceError } from '@trainyard/contracts';
import { PrismaService } from '@trainyard/db';
import { ConversationsService } from '../src/stored-responses/conversations.service';
import { ExpiredStateSweeper } from '../src/stored-responses/expired-state.sweeper';
import { StoredResponsesService } from '../src/stored-responses/stored-responses.service';
import { startStoredStateFixture, StoredStateFixture } from './support/stored-state-fixture';

const DAY_MS = 24 * 60 * 60 * 1000;

describe('stored responses and conversations against real Postgres', () => {
  let fixture: StoredStateFixture;
  let prisma: PrismaService;
  let responses: StoredResponsesService;
  let conversations: ConversationsService;
  let sweeper: ExpiredStateSweeper;
  let acme: string;
  let globex: string;
  let serial = 0;

  beforeAll(async () => {
    fixture = await startStoredStateFixture();
    ({ prisma, acme, globex } = fixture);
    responses = fixture.moduleRef.get(StoredResponsesService);
    conversations = fixture.moduleRef.get(ConversationsService);
    sweeper = fixture.moduleRef.get(ExpiredStateSweeper);
  });

  afterAll(() => fixture?.close());

  const message = (id: string, text: string, role = 'user'): ResponseItem => ({ id, type: 'message', role, content: [{ type: 'input_text', text }], status: 'completed' });
  const responseObject = (output: ResponseItem[]): ResponseObject => ({ id: `resp_${String(++serial).padStart(32, '0')}`, object: 'response', status: 'completed', output });
  const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (err: unknown) => err as ServiceError);

  async function store(entity: string, input: ResponseItem[], output: ResponseItem[]): Promise<ResponseObject> {
    const response = responseObject(output);
    await responses.store({ entity_id: entity, stored: { response, input_items: input }, conversation: null });
    return response;
  }

  it('keeps a response with its input items and output, read back whole, text with a NUL character included', async () => {
    const response = await store(acme, [message('msg_in1', 'nul \u0000 inside'), message('msg_in2', 'second')], [message('msg_out', 'answer', 'assistant')]);
    expect(await responses.get({ entity_id: acme, response_id: response.id })).toEqual(response);
    const items = await responses.inputItems({ entity_id: acme, response_id: response.id, limit: 20, order: 'asc' });
    expect(items).toEqual({ object: 'list', data: [message('msg_in1', 'nul \u0000 inside'), message('msg_in2', 'second')], first_id: 'msg_in1', last_id: 'msg_in2', has_more: false });
  });

  it('pages input items after an id, in either order, saying when there are more', async () => {
    const response = await store(acme, ['a', 'b', 'c', 'd'].map((x) => message(`msg_${x}`, x)), []);
    const page = (order: 'asc' | 'desc', after?: string) => responses.inputItems({ entity_id: acme, response_id: response.id, limit: 2, order, after });
    expect(await page('desc')).toMatchObject({ data: [{ id: 'msg_d' }, { id: 'msg_c' }], has_more: true, last_id: 'msg_c' });
    expect(await page('desc', 'msg_c')).toMatchObject({ data: [{ id: 'msg_b' }, { id: 'msg_a' }], has_more: false });
    expect(await page('asc', 'msg_b')).toMatchObject({ data: [{ id: 'msg_c' }, { id: 'msg_d' }], has_more: false });
    expect(await page('asc', 'msg_d')).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    expect((await failure(page('asc', 'msg_nope')))?.details.param).toBe('after');
  });

  it('continues a response with its input and output as the earlier turns, and finds referenced items of its own entity only', async () => {
    const first = await store(acme, [message('msg_q1', 'question')], [message('msg_a1', 'answer', 'assistant')]);
    const context = await responses.context({ entity_id: acme, previous_response_id: first.id, conversation_id: null, item_ids: ['msg_a1', 'msg_missing'] });
    expect(context.items.map((item) => item.id)).toEqual(['msg_q1', 'msg_a1']);
    expect(context.references.map((item) => item.id)).toEqual(['msg_a1']);
    const theirs = await responses.context({ entity_id: globex, previous_response_id: null, conversation_id: null, item_ids: ['msg_a1'] });
    expect(theirs.references).toEqual([]);
    const error = await failure(responses.context({ entity_id: globex, previous_response_id: first.id, conversation_id: null, item_ids: [] }));
    expect({ code: error?.code, param: error?.details.param }).toEqual({ code: 'not_found', param: 'previous_response_id' });
  });

  it('answers another entity\'s response exactly like one that does not exist, on every route', async () => {
    const response = await store(acme, [message('msg_x', 'x')], []);
    for (const id of [response.id, 'resp_nope', 'bad\u0000id']) {
      for (const call of [
        () => responses.get({ entity_id: globex, response_id: id }),
        () => responses.delete({ entity_id: globex, response_id: id }),
        () => responses.inputItems({ entity_id: globex, response_id: id, limit: 20, order: 'desc' }),
      ]) {
        const error = await failure(call());
        expect([error?.code, error?.message.replace(id, '<id>')]).toEqual(['not_found', "Response with id '<id>' not found."]);
      }
    }
    expect((await responses.get({ entity_id: acme, response_id: response.id })).id).toBe(response.id);
  });

  it('deletes a response with its items: the rows are gone, and it is not found any more', async () => {
    const response = await store(acme, [message('msg_d1', 'x')], [message('msg_d2', 'y', 'assistant')]);
    expect(await responses.delete({ entity_id: acme, response_id: response.id })).toEqual({ id: response.id, object: 'response.deleted', deleted: true });
    expect(await prisma.storedResponse.count({ where: { id: response.id } })).toBe(0);
    expect(await prisma.responseItem.count({ where: { responseId: response.id } })).toBe(0);
    expect((await failure(responses.get({ entity_id: acme, response_id: response.id })))?.code).toBe('not_found');
  });

  it('keeps a conversation\'s items in order, appends a response\'s input and output to it, and reads them as the earlier turns', async () => {
    const conversation = await conversations.create({ entity_id: acme, items: [message('msg_c1', 'hello')], metadata: { topic: 'demo' } });
    expect(conversation).toMatchObject({ id: expect.stringMatching(/^conv_/), object: 'conversation', metadata: { topic: 'demo' } });
    const response = responseObject([message('msg_c3', 'hi there', 'assistant')]);
    await responses.store({ entity_id: acme, stored: null, conversation: { id: conversation.id, items: [message('msg_c2', 'how are you'), ...response.output] } });
    const context = await responses.context({ entity_id: acme, previous_response_id: null, conversation_id: conversation.id, item_ids: [] });
    expect(context.items.map((item) => item.id)).toEqual(['msg_c1', 'msg_c2', 'msg_c3']);
    // store: false kept nothing of the response itself.
    expect(await prisma.storedResponse.count({ where: { id: response.id } })).toBe(0);
    const list = await conversations.listItems({ entity_id: acme, conversation_id: conversation.id, limit: 20, order: 'desc' });
    expect(list.data.map((item) => item.id)).toEqual(['msg_c3', 'msg_c2', 'msg_c1']);
    expect(await conversations.getItem({ entity_id: acme, conversation_id: conversation.id, item_id: 'msg_c2' })).toEqual(message('msg_c2', 'how are you'));
    expect(await conversations.deleteItem({ entity_id: acme, conversation_id: conversation.id, item_id: 'msg_c2' })).toMatchObject({ id: conversation.id });
    expect((await failure(conversations.getItem({ entity_id: acme, conversation_id: conversation.id, item_id: 'msg_c2' })))?.code).toBe('not_found');
    expect((await conversations.update({ entity_id: acme, conversation_id: conversation.id, metadata: { topic: 'other' } })).metadata).toEqual({ topic: 'other' });
  });

  it('keeps nothing of a response whose conversation is gone, or is another entity\'s', async () => {
    const conversation = await conversations.create({ entity_id: acme, items: [], metadata: {} });
    const response = responseObject([message('msg_g1', 'x', 'assistant')]);
    const error = await failure(responses.store({ entity_id: globex, stored: { response, input_items: [] }, conversation: { id: conversation.id, items: response.output } }));
    expect({ code: error?.code, param: error?.details.param }).toEqual({ code: 'not_found', param: 'conversation' });
    expect(await prisma.storedResponse.count({ where: { id: response.id } })).toBe(0);
    expect(await prisma.conversationItem.count({ where: { conversationId: conversation.id } })).toBe(0);
    for (const call of [
      () => conversations.get({ entity_id: globex, conversation_id: conversation.id }),
      () => conversations.update({ entity_id: globex, conversation_id: conversation.id, metadata: {} }),
      () => conversations.delete({ entity_id: globex, conversation_id: conversation.id }),
      () => conversations.addItems({ entity_id: globex, conversation_id: conversation.id, items: [message('msg_z', 'z')] }),
    ]) {
      expect((await failure(call()))?.code).toBe('not_found');
    }
  });

  it('deletes a conversation with its items', async () => {
    const conversation = await conversations.create({ entity_id: acme, items: [message('msg_del', 'x')], metadata: {} });
    expect(await conversations.delete({ entity_id: acme, conversation_id: conversation.id })).toEqual({ id: conversation.id, object: 'conversation.deleted', deleted: true });
    expect(await prisma.conversation.count({ where: { id: conversation.id } })).toBe(0);
    expect(await prisma.conversationItem.count({ where: { conversationId: conversation.id } })).toBe(0);
  });

  it('hides what is past the retention at once, and the sweep deletes it with its items', async () => {
    const old = await store(acme, [message('msg_old', 'x')], []);
    const conversation = await conversations.create({ entity_id: acme, items: [message('msg_oldc', 'x')], metadata: {} });
    const fresh = await store(acme, [message('msg_fresh', 'x')], []);
    const longAgo = new Date(Date.now() - 31 * DAY_MS);
    await prisma.storedResponse.update({ where: { id: old.id }, data: { createdAt: longAgo } });
    await prisma.conversation.update({ where: { id: conversation.id }, data: { updatedAt: longAgo } });
    expect((await failure(responses.get({ entity_id: acme, response_id: old.id })))?.code).toBe('not_found');
    expect((await failure(conversations.get({ entity_id: acme, conversation_id: conversation.id })))?.code).toBe('not_found');
    expect((await responses.context({ entity_id: acme, previous_response_id: null, conversation_id: null, item_ids: ['msg_old', 'msg_oldc'] })).references).toEqual([]);

    expect(await sweeper.sweep()).toEqual({ responses: 1, conversations: 1, completions: 0 });
    expect(await prisma.responseItem.count({ where: { responseId: old.id } })).toBe(0);
    expect(await prisma.conversationItem.count({ where: { conversationId: conversation.id } })).toBe(0);
    expect((await responses.get({ entity_id: acme, response_id: fresh.id })).id).toBe(fresh.id);
  });
});
