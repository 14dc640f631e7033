import { EventEmitter } from 'node:events';
import { ChatCompletionParams, CompletionEnded, ErrorCode, InferenceEvent, ServiceError, StartCompletionReply, Subjects } from '@trainyard/contracts';
import { encodeMessage, MessageBus, RpcClient } from '@trainyard/messaging';
import { GracefulShutdown, ReadinessService } from '@trainyard/runtime';
import type { Response } from 'express';
import { GatewayConfig } from '../config/gateway.config';
import { CompletionEventsHub, CompletionInbox } from './completion-events.hub';
import { CompletionRunner, CompletionStart, foldEvents } from './completion-runner';

const STARTED: StartCompletionReply = { model: 'tiny', base_model: 'tiny', checkpoint_step: null, model_id: null, logprobs: false };

const START: CompletionStart = {
  completionId: 'c-1',
  caller: { entityId: 'e-1', entityName: 'acme', apiKeyId: 'k-1' },
  params: { model: 'tiny' } as ChatCompletionParams,
  logprobsRequested: null,
};

/**
 * The runner with fakes for its NATS side: the hub hands out a real inbox the test pushes the
 * worker's events into, chat's start request answers (or refuses) as the test says, and the
 * bus records what the runner announces. The response is an EventEmitter: 'close' is the
 * client going away.
 */
class Fakes {
  readonly ended: CompletionEnded[] = [];
  readonly requests: { subject: string; payload: unknown }[] = [];
  inbox!: CompletionInbox;
  startReply: () => Promise<StartCompletionReply> = async () => STARTED;
  alive: boolean | null = true;
  publishFails = false;

  readonly hub = {
    open: (completionId: string) => (this.inbox = new CompletionInbox(completionId, `events.gw.${completionId}`)),
  } as unknown as CompletionEventsHub;

  readonly rpc = {
    request: async (subject: { name: string }, payload: unknown) => {
      this.requests.push({ subject: subject.name, payload });
      if (subject.name === Subjects.chat.completionLiveness.name) return { alive: this.alive };
      return this.startReply();
    },
  } as unknown as RpcClient;

  readonly bus = {
    publish: (subject: { name: string }, payload: CompletionEnded) => {
      if (this.publishFails) throw new Error('connection closed');
      expect(subject.name).toBe(Subjects.chat.completionEnded.name);
      this.ended.push(payload);
    },
  } as unknown as MessageBus;

  private seq = 0;

  /** The worker publishes `event`, numbered as a worker numbers them. */
  send(event: InferenceEvent): void {
    this.inbox.push(encodeMessage({ ...event, seq: this.seq++ }));
  }
}

const DONE: InferenceEvent = { type: 'done', usage: { prompt_tokens: 1, completion_tokens: 1 } };

describe('CompletionRunner', () => {
  let fakes: Fakes;
  let shutdown: GracefulShutdown;
  let runner: CompletionRunner;
  let res: EventEmitter;

  beforeEach(() => {
    fakes = new Fakes();
    shutdown = new GracefulShutdown({ register: () => undefined } as unknown as ReadinessService);
    const config = Object.assign(new GatewayConfig(), { COMPLETION_IDLE_TIMEOUT_MS: 60_000, COMPLETION_PROBE_AFTER_MS: 30_000 });
    runner = new CompletionRunner(config, fakes.bus, fakes.rpc, shutdown, fakes.hub);
    res = new EventEmitter();
  });

  /** Runs the completion, collecting its events until done; the test feeds the worker's side through `worker`. */
  function run(worker: () => void, consume?: (events: AsyncGenerator<InferenceEvent>) => Promise<void>): Promise<InferenceEvent[]> {
    const seen: InferenceEvent[] = [];
    return runner
      .run(START, res as unknown as Response, async (_started, events) => {
        worker();
        if (consume) return consume(events);
        for await (const event of events) {
          seen.push(event);
          if (event.type === 'done') return;
        }
      })
      .then(() => seen);
  }

  async function failure(run: Promise<unknown>): Promise<ServiceError> {
    try {
      await run;
    } catch (err) {
      if (err instanceof ServiceError) return err;
      throw err;
    }
    throw new Error('expected the run to fail');
  }

  it('asks chat to start the completion with its inbox as the reply subject', async () => {
    await run(() => fakes.send(DONE));
    expect(fakes.requests[0]).toMatchObject({
      subject: Subjects.chat.startCompletion.name,
      payload: { completion_id: 'c-1', entity_id: 'e-1', entity_name: 'acme', reply_subject: 'events.gw.c-1' },
    });
  });

  it("hands the worker's events over in order, without its bookkeeping, and announces the end once, not as a cancel", async () => {
    const seen = await run(() => {
      fakes.send({ type: 'accepted' });
      fakes.send({ type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
      fakes.send({ type: 'delta', index: 0, text: 'hi', tokens: [] });
      fakes.send(DONE);
    });
    expect(seen.map((e) => e.type)).toEqual(['prompt', 'delta', 'done']);
    expect(fakes.ended).toEqual([{ completion_id: 'c-1' }]);
  });

  it("turns the worker's error event into the ServiceError it carries, and cancels the generation", async () => {
    const err = await failure(run(() => fakes.send({ type: 'error', error: { code: ErrorCode.ContextLengthExceeded, message: 'too long', details: {} } })));
    expect(err.code).toBe(ErrorCode.ContextLengthExceeded);
    expect(err.message).toBe('too long');
    expect(fakes.ended).toEqual([{ completion_id: 'c-1', cancel: true }]);
  });

  it('passes a refused start on, and still announces the end so that chat frees the place', async () => {
    fakes.startReply = async () => {
      throw new ServiceError(ErrorCode.RateLimited, 'busy');
    };
    const err = await failure(run(() => undefined));
    expect(err.code).toBe(ErrorCode.RateLimited);
    expect(fakes.ended).toHaveLength(1);
  });

  it('cancels the generation once when the client goes away, and stops reading', async () => {
    const seen: InferenceEvent[] = [];
    await run(
      () => fakes.send({ type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] }),
      async (events) => {
        for await (const event of events) {
          seen.push(event);
          res.emit('close');
          res.emit('close');
          fakes.send(DONE);
        }
      },
    );
    expect(seen.map((e) => e.type)).toEqual(['prompt']);
    expect(fakes.ended).toEqual([{ completion_id: 'c-1', cancel: true }]);
  });

  it('cancels the generation when consuming the events throws', async () => {
    await expect(
      run(
        () => fakes.send(DONE),
        async () => {
          throw new Error('client socket broke');
        },
      ),
    ).rejects.toThrow('client socket broke');
    expect(fakes.ended).toEqual([{ completion_id: 'c-1', cancel: true }]);
  });

  it('fails a completion still running when the drain time is over with a 503 that says to retry', async () => {
    const err = await failure(
      run(() => {
        fakes.send({ type: 'accepted' });
        shutdown.giveUp();
      }),
    );
    expect(err.code).toBe(ErrorCode.Unavailable);
    expect(err.details.retryAfterSeconds).toBe(1);
    expect(err.message).toContain('shutting down');
  });

  it('fails with 503 when a gap shows an event was lost', async () => {
    const err = await failure(
      run(() => {
        fakes.send({ type: 'accepted' });
        fakes.inbox.push(encodeMessage({ ...DONE, seq: 5 }));
      }),
    );
    expect(err.code).toBe(ErrorCode.Unavailable);
    expect(err.message).toContain('lost in transit');
  });

  it('finishes the run even when its end cannot be announced', async () => {
    fakes.publishFails = true;
    await expect(run(() => fakes.send(DONE))).resolves.toHaveLength(1);
  });
});

describe('foldEvents', () => {
  async function* events(...list: InferenceEvent[]): AsyncGenerator<InferenceEvent> {
    yield* list;
  }

  it('emits what the fold makes of each event and stops once the fold is done', async () => {
    let done = false;
    const pieces: string[] = [];
    await foldEvents(
      events({ type: 'delta', index: 0, text: 'a', tokens: [] }, DONE, { type: 'delta', index: 0, text: 'late', tokens: [] }),
      {
        apply: (event) => {
          if (event.type === 'done') done = true;
          return event.type === 'delta' ? [event.text] : [];
        },
        get done() {
          return done;
        },
      },
      (piece) => pieces.push(piece),
    );
    expect(pieces).toEqual(['a']);
  });

  it('is a 503, not a torn answer, when the events end before the fold is done', async () => {
    await expect(foldEvents(events({ type: 'delta', index: 0, text: 'a', tokens: [] }), { apply: () => [], done: false })).rejects.toMatchObject({
      code: ErrorCode.Unavailable,
    });
  });
});
