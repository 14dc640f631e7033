import { COMPLETION_EVENTS_PREFIX, ErrorCode, InferenceEventMessage, ServiceError } from '@trainyard/contracts';
import { ErrorCode as NatsErrorCode, JSONCodec, Msg, NatsConnection, NatsError, Subscription } from 'nats';
import { CompletionEventsReader } from './completion-events.reader';

const codec = JSONCodec<InferenceEventMessage>();

/** A subscription whose messages the test pushes. */
function fakeSubscription(completionId: string) {
  const queue: Msg[] = [];
  let wake: (() => void) | undefined;
  const subscription = {
    getSubject: () => `${COMPLETION_EVENTS_PREFIX}.${completionId}`,
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        yield queue.shift() as Msg;
      }
    },
  } as unknown as Subscription;
  const push = (event: InferenceEventMessage) => {
    queue.push({ data: codec.encode(event) } as Msg);
    wake?.();
  };
  return { subscription, push };
}

function fakeConnection(probe: () => Promise<unknown>) {
  const request = jest.fn(probe);
  return { nc: { request } as unknown as NatsConnection, request };
}

const noResponders = () => Promise.reject(NatsError.errorForCode(NatsErrorCode.NoResponders));
const answered = () => Promise.resolve({});
const options = { idleTimeoutMs: 2_000, probeAfterMs: 50 };

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
}

describe('CompletionEventsReader', () => {
  it('passes the events on in order, keeping the acceptance to itself', async () => {
    const { subscription, push } = fakeSubscription('c1');
    const reader = new CompletionEventsReader(fakeConnection(answered).nc, subscription, options);
    push({ seq: 0, type: 'accepted' });
    push({ seq: 1, type: 'prompt', prompt_tokens: 2, prompt_token_ids: [] });
    push({ seq: 2, type: 'done', usage: { prompt_tokens: 2, completion_tokens: 0 } });
    expect((await reader.next()).value).toMatchObject({ type: 'prompt' });
    expect((await reader.next()).value).toMatchObject({ type: 'done' });
  });

  it('fails with 503 as soon as the worker that took the completion is gone', async () => {
    const { subscription, push } = fakeSubscription('c2');
    const { nc, request } = fakeConnection(noResponders);
    const reader = new CompletionEventsReader(nc, subscription, options);
    push({ seq: 0, type: 'accepted' });
    const error = await failure(reader.next());
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(error.message).toMatch(/stopped before it finished/);
    expect(request).toHaveBeenCalledWith('inference.completion.alive.v1.c2', undefined, expect.anything());
  });

  it('keeps waiting while the worker answers for a slow completion', async () => {
    const { subscription, push } = fakeSubscription('c3');
    const { nc, request } = fakeConnection(answered);
    const reader = new CompletionEventsReader(nc, subscription, options);
    push({ seq: 0, type: 'accepted' });
    const next = reader.next();
    await new Promise((resolve) => setTimeout(resolve, 200));
    push({ seq: 1, type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
    expect((await next).value).toMatchObject({ type: 'prompt' });
    expect(request.mock.calls.length).toBeGreaterThan(0);
  });

  it('does not probe before a worker took the completion (it may still be queued)', async () => {
    const { subscription } = fakeSubscription('c4');
    const { nc, request } = fakeConnection(noResponders);
    const reader = new CompletionEventsReader(nc, subscription, { idleTimeoutMs: 300, probeAfterMs: 50 });
    const error = await failure(reader.next());
    expect(error.code).toBe(ErrorCode.Timeout);
    expect(request).not.toHaveBeenCalled();
  });

  it('fails with 503 when an event went missing in transit', async () => {
    const { subscription, push } = fakeSubscription('c5');
    const reader = new CompletionEventsReader(fakeConnection(answered).nc, subscription, options);
    push({ seq: 0, type: 'accepted' });
    push({ seq: 1, type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
    push({ seq: 3, type: 'done', usage: { prompt_tokens: 1, completion_tokens: 1 } });
    await reader.next();
    const error = await failure(reader.next());
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(error.message).toMatch(/event 2 never arrived/);
  });
});
