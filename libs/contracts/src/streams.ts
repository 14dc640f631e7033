/**
 * JetStream work queues. Long work never goes request/reply: it is published here and
 * consumed by workers. Stream names and subjects take a prefix so that tests and a
 * developer's running stack can share one nats-server without colliding.
 */
export interface WorkQueueSpec {
  /** Stream name without prefix, e.g. INFERENCE_WORK. */
  stream: string;
  /** Subject without prefix, e.g. work.inference.v1. */
  subject: string;
  /** Durable consumer the workers share. */
  consumer: string;
  /** How long a worker may hold a message without acking or saying it is still working. */
  ackWaitMs?: number;
}

export const WorkQueues = {
  // Workers ack a completion the moment they take it: a message only goes unacked when it
  // reached a worker that died before reading it, and it should go to another one soon.
  inference: { stream: 'INFERENCE_WORK', subject: 'work.inference.v1', consumer: 'inference-workers', ackWaitMs: 10_000 },
  // Training workers heartbeat every few seconds: a crashed one's job is redelivered soon.
  training: { stream: 'TRAINING_WORK', subject: 'work.training.v1', consumer: 'training-workers', ackWaitMs: 20_000 },
} as const satisfies Record<string, WorkQueueSpec>;

export type WorkQueueName = keyof typeof WorkQueues;

/** The concrete stream name and subject for a deployment's prefix ('' in production). */
export function resolveWorkQueue(spec: WorkQueueSpec, prefix: string): WorkQueueSpec {
  if (!prefix) return spec;
  return { ...spec, stream: `${prefix.toUpperCase()}_${spec.stream}`, subject: `${prefix.toLowerCase()}.${spec.subject}` };
}
