import { ErrorCode } from '@trainyard/contracts';
import { GpuFault } from '@trainyard/engine';
import { generationFailedEvent } from './inference-events';

describe('generationFailedEvent', () => {
  it('tells a completion the GPU ran out of memory as unavailable, for a retry', () => {
    const event = generationFailedEvent(new GpuFault('out-of-memory', 'Out of memory. While calling [Device].CreateBuffer.'));
    expect(event.error.code).toBe(ErrorCode.Unavailable);
    expect(event.error.message).toBe('The GPU ran out of memory for this completion; retry it, or send a shorter prompt or fewer choices');
    expect(event.error.details).toEqual({ retryAfterSeconds: 1 });
  });

  it('tells a completion whose GPU device was lost as unavailable, for a retry once the worker restarts', () => {
    const event = generationFailedEvent(new GpuFault('lost', 'unknown, Device lost.'));
    expect(event.error.code).toBe(ErrorCode.Unavailable);
    expect(event.error.message).toBe('The inference worker lost its GPU and is restarting; retry the completion');
    expect(event.error.details).toEqual({ retryAfterSeconds: 5 });
  });

  it.each([new GpuFault('validation', 'Buffer usages must not be 0.'), new GpuFault('internal', 'Internal error.'), new Error('boom')])('tells any other failure (%s) as internal', (err) => {
    expect(generationFailedEvent(err).error).toMatchObject({ code: ErrorCode.Internal, message: 'Generation failed on the inference worker' });
  });
});
