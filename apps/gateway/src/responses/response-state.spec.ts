import type { ResponseObject, ServedTrace, StoreResponseRequest } from '@trainyard/contracts';
import type { RpcClient } from '@trainyard/messaging';
import type { Caller } from '../auth/caller';
import type { CreateResponseRequest } from './dto/create-response.request';
import { MAX_STORE_BYTES, ResponseState } from './response-state';

describe('ResponseState.keep', () => {
  const caller = { entityId: 'e-1' } as Caller;
  const response = { id: 'resp_1', object: 'response', output: [] } as ResponseObject;
  const trace = (text: string): ServedTrace => ({ base_model: 'b', model_id: null, checkpoint_step: null, messages: [{ role: 'user', content: text }], tools: null, prompt_token_ids: [1], choices: [] });

  /** What keep() sends the chat service for a stored response of this input and trace. */
  async function kept(input: string, text: string): Promise<StoreResponseRequest> {
    const sent: StoreResponseRequest[] = [];
    const rpc = { request: async (_subject: unknown, body: StoreResponseRequest) => void sent.push(body) } as unknown as RpcClient;
    const item = { id: 'msg_1', type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] };
    await new ResponseState(rpc).keep(caller, {} as CreateResponseRequest, response, { earlier: [], own: [{ item, at: 'input' }] }, trace(text));
    return sent[0];
  }

  it('keeps the trace of what the model was served with a stored response', async () => {
    const request = await kept('hi', 'hi');
    expect(request.stored?.trace).toEqual(trace('hi'));
  });

  it('keeps a response without its trace when only that way it fits in one message', async () => {
    const half = 'x'.repeat(Math.ceil(MAX_STORE_BYTES / 2) + 10);
    const request = await kept(half, half);
    expect(request.stored?.response.id).toBe('resp_1');
    expect(request.stored?.trace).toBeUndefined();
  });
});
