import { ErrorCode, InferenceEventMessage, ServiceError } from '@trainyard/contracts';
import { decodeMessage, encodeMessage } from '@trainyard/messaging';
import { CompletionInbox } from './completion-events.hub';
import { CompletionEventsReader } from './completion-events.reader';

/** A completion's inbox whose events the test pushes, as the hub does. */
function inboxOf(completionId: string) {
  const inbox = new CompletionInbox(completionId, `events.${completionId}`);
  const push = (event: InferenceEventMessage) => inbox.push(encodeMessage(event));
  return { inbox, push };
}

/** Chat's answers to the reader's liveness probes, counted. */
function fakeProbe(probe: () => Promise<boolean | null>) {
  const request = jest.fn(probe);
  return { probe: request as (completionId: string) => Promise<boolean | null>, request };
}

const noResponders = () => Promise.resolve(false);
const answered = () => Promise.resolve(true);
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
    const { inbox, push } = inboxOf('c1');
    const reader = new CompletionEventsReader(fakeProbe(answered).probe, inbox, options);
    push({ seq: 0, type: 'accepted' });
    push({ seq: 1, type: 'prompt', prompt_tokens: 2, prompt_token_ids: [] });
    push({ seq: 2, type: 'done', usage: { prompt_tokens: 2, completion_tokens: 0 } });
    expect((await reader.next()).value).toMatchObject({ type: 'prompt' });
    expect((await reader.next()).value).toMatchObject({ type: 'done' });
  });

  it('fails with 503 as soon as the worker that took the completion is gone', async () => {
    const { inbox, push } = inboxOf('c2');
    const { probe, request } = fakeProbe(noResponders);
    const reader = new CompletionEventsReader(probe, inbox, options);
    push({ seq: 0, type: 'accepted' });
    const error = await failure(reader.next());
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(error.message).toMatch(/stopped before it finished/);
    expect(request).toHaveBeenCalledWith('c2');
  });

  it('reads the last events that arrive while the probe finds the finished worker gone', async () => {
    const { inbox, push } = inboxOf('c6');
    const { probe } = fakeProbe(async () => {
      // The worker sent its end and then let go of the completion: the end is in transit.
      setTimeout(() => push({ seq: 1, type: 'done', usage: { prompt_tokens: 1, completion_tokens: 0 } }), 10);
      return false;
    });
    const reader = new CompletionEventsReader(probe, inbox, options);
    push({ seq: 0, type: 'accepted' });
    expect((await reader.next()).value).toMatchObject({ type: 'done' });
  });

  it('keeps waiting while the worker answers for a slow completion', async () => {
    const { inbox, push } = inboxOf('c3');
    const { probe, request } = fakeProbe(answered);
    const reader = new CompletionEventsReader(probe, inbox, options);
    push({ seq: 0, type: 'accepted' });
    const next = reader.next();
    await new Promise((resolve) => setTimeout(resolve, 200));
    push({ seq: 1, type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
    expect((await next).value).toMatchObject({ type: 'prompt' });
    expect(request.mock.calls.length).toBeGreaterThan(0);
  });

  it('does not probe before a worker took the completion (it may still be queued)', async () => {
    const { inbox } = inboxOf('c4');
    const { probe, request } = fakeProbe(noResponders);
    const reader = new CompletionEventsReader(probe, inbox, { idleTimeoutMs: 300, probeAfterMs: 50 });
    const error = await failure(reader.next());
    expect(error.code).toBe(ErrorCode.Timeout);
    expect(request).not.toHaveBeenCalled();
  });

  it('fails with 503 when an event went missing in transit', async () => {
    const { inbox, push } = inboxOf('c5');
    const reader = new CompletionEventsReader(fakeProbe(answered).probe, inbox, options);
    push({ seq: 0, type: 'accepted' });
    push({ seq: 1, type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
    push({ seq: 3, type: 'done', usage: { prompt_tokens: 1, completion_tokens: 1 } });
    await reader.next();
    const error = await failure(reader.next());
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(error.message).toMatch(/event 2 never arrived/);
  });
});

describe('CompletionInbox', () => {
  it('hands events over in order, to a reader already waiting or later', async () => {
    const { inbox, push } = inboxOf('i1');
    const waiting = inbox.next();
    push({ seq: 0, type: 'accepted' });
    push({ seq: 1, type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
    push({ seq: 2, type: 'done', usage: { prompt_tokens: 1, completion_tokens: 0 } });
    const seqs = [];
    for (const next of [await waiting, await inbox.next(), await inbox.next()]) seqs.push(decodeMessage<InferenceEventMessage>(next.value as Uint8Array).seq);
    expect(seqs).toEqual([0, 1, 2]);
  });

  it('ends a waiting reader when closed, drops what was not read and ignores what comes after', async () => {
    let closed = 0;
    const inbox = new CompletionInbox('i2', 'events.i2', () => closed++);
    const waiting = inbox.next();
    inbox.close();
    expect(await waiting).toEqual({ done: true, value: undefined });
    inbox.push(encodeMessage<InferenceEventMessage>({ seq: 0, type: 'accepted' }));
    expect(await inbox.next()).toEqual({ done: true, value: undefined });
    inbox.close();
    expect(closed).toBe(1);
  });

  it('ends the reader: the completion has no result', async () => {
    const { inbox, push } = inboxOf('i3');
    const reader = new CompletionEventsReader(fakeProbe(answered).probe, inbox, options);
    push({ seq: 0, type: 'accepted' });
    inbox.close();
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });
});
