import { ServiceError } from '@trainyard/contracts';
import { PlacedItem, toChatMessages, toInputEntries } from './response-items';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('expected a refusal');
};

describe('toInputEntries', () => {
  it('makes a string one user message in the stored shape, with a new id', () => {
    expect(toInputEntries('Hi')).toEqual([
      { item: { id: expect.stringMatching(/^msg_[0-9a-f]{32}$/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }], status: 'completed' }, at: 'input' },
    ]);
  });

  it('gives every item the shape OpenAI lists it in, keeping a client\'s id that can be stored', () => {
    const entries = toInputEntries([
      { role: 'assistant', content: 'Sure.', id: 'msg_abc' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'a' }], id: 'bad id\u0000' },
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'ok', extra: 1 }] },
      { type: 'item_reference', id: 'msg_old' },
    ]);
    expect(entries).toEqual([
      { item: { id: 'msg_abc', type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Sure.', annotations: [] }], status: 'completed' }, at: 'input[0]' },
      { item: { id: expect.stringMatching(/^msg_/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'a' }], status: 'completed' }, at: 'input[1]' },
      { item: { id: expect.stringMatching(/^fc_/), type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', status: 'completed' }, at: 'input[2]' },
      { item: { id: expect.stringMatching(/^fco_/), type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'ok' }], status: 'completed' }, at: 'input[3]' },
      { reference: 'msg_old', at: 'input[4]' },
    ]);
  });

  it.each([
    [[{ type: 'item_reference' }], 'items[0].id'],
    [[{ type: 'computer_call' }], 'items[0].type'],
    [[{ type: 'reasoning', summary: 'not parts' }], 'items[0].content'],
    [[{ role: 'tool', content: 'x' }], 'items[0].role'],
    [[{ role: 'user', content: 5 }], 'items[0].content'],
  ])('refuses %j naming %s', (items, param) => {
    expect(refusal(() => toInputEntries(items, 'items')).details.param).toBe(param);
  });
});

describe('toChatMessages', () => {
  const placed = (input: Record<string, unknown>[]) => toInputEntries(input) as PlacedItem[];

  it('joins text parts, puts calls on the assistant message before them and outputs after', () => {
    expect(
      toChatMessages(
        placed([
          { role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'input_text', text: 'b' }] },
          { role: 'assistant', content: 'Checking.' },
          { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c1', output: 'done' },
        ]),
      ),
    ).toEqual([
      { role: 'user', content: 'ab' },
      { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'done' },
    ]);
  });

  it('refuses an output of no earlier call, naming where the output came from', () => {
    expect(refusal(() => toChatMessages(placed([{ type: 'function_call_output', call_id: 'c9', output: 'x' }]))).details.param).toBe('input[0].call_id');
  });
});
