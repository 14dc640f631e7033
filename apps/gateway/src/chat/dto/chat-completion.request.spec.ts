import { ServiceError } from '@trainyard/contracts';
import { createValidationPipe } from '../../http/validation.pipe';
import { ChatCompletionRequest } from './chat-completion.request';

const pipe = createValidationPipe();
const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const problems = async (body: Record<string, unknown>) =>
  pipe.transform({ ...base, ...body }, { type: 'body', metatype: ChatCompletionRequest }).then(
    () => [],
    (err: ServiceError) => (err.details.issues ?? []).map((i) => i.loc.slice(1).join('.')),
  );

describe('ChatCompletionRequest', () => {
  it('accepts what the SDKs send, and an assistant message without content', async () => {
    expect(await problems({ seed: -42, response_format: { type: 'json_object' }, stream_options: { include_usage: true } })).toEqual([]);
    expect(await problems({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [] }] })).toEqual([]);
    const parameters = { type: 'object', properties: { city: { type: 'string' } } };
    expect(await problems({ tools: [{ type: 'function', function: { name: 'f', parameters } }, { type: 'function', function: { name: 'g', parameters: {} } }] })).toEqual([]);
  });

  it.each<[string, Record<string, unknown>]>([
    ['seed', { seed: 1e308 }],
    ['seed', { seed: -(2 ** 60) }],
    ['model', { model: 'x'.repeat(1025) }], // longer than any model name that resolves
    ['response_format', { response_format: [] }],
    ['stream_options', { stream_options: [{ include_usage: true }] }],
    ['response_format.json_schema', { response_format: { type: 'json_schema', json_schema: [] } }],
    ['messages', { messages: [[{ role: 'user', content: 'hi' }]] }],
    // json_schema without a schema would be free JSON, not what the client asked for.
    ['response_format.json_schema.schema', { response_format: { type: 'json_schema', json_schema: { name: 'x' } } }],
    // Arguments are an object: a schema of another type cannot describe them.
    ['tools.0.function.parameters', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'string' } } }] }],
    ['tools.1.function.parameters', { tools: [{ type: 'function', function: { name: 'f' } }, { type: 'function', function: { name: 'g', parameters: { type: ['object', 'null'] } } }] }],
    ['messages.0.content', { messages: [{ role: 'user' }] }],
    ['messages.0.content', { messages: [{ role: 'system', content: null }] }],
  ])('refuses a bad value of %s, naming it', async (field, body) => {
    expect(await problems(body)).toContain(field);
  });
});
