import { resolveWorkQueue, WorkQueues } from './streams';

describe('resolveWorkQueue', () => {
  it('leaves production names alone', () => {
    expect(resolveWorkQueue(WorkQueues.training, '')).toEqual(WorkQueues.training);
  });

  it('prefixes stream and subject so two stacks can share one nats-server', () => {
    const a = resolveWorkQueue(WorkQueues.training, 'test_a');
    const b = resolveWorkQueue(WorkQueues.training, 'test_b');
    expect(a).toEqual({ ...WorkQueues.training, stream: 'TEST_A_TRAINING_WORK', subject: 'test_a.work.training.v1' });
    expect(a.stream).not.toBe(b.stream);
    expect(a.subject).not.toBe(b.subject);
  });
});
