import type { InferenceWork } from './chat/chat-completion.messages';
import type { TinkerWorkItem } from './training/tinker.messages';
import type { TrainingWorkItem } from './training/training-jobs.messages';

/**
 * JetStream work queues. Long work never goes request/reply: it is published here and
 * consumed by workers. Stream names and subjects take a prefix so that tests and a
 * developer's running stack can share one nats-server without colliding. `T` is the type of
 * the queue's messages, carried as RpcSubject carries its request's, so that the producer's
 * `enqueue` and the worker's `consume` agree on it.
 */
export interface WorkQueueSpec<T = unknown> {
  /** Stream name without prefix, e.g. INFERENCE_WORK. */
  stream: string;
  /** Subject without prefix, e.g. work.inference.v1. */
  subject: string;
  /** Durable consumer the workers share. */
  consumer: string;
  /** How long a worker may hold a message without acking or saying it is still working. */
  ackWaitMs?: number;
  /** Deliveries before a message is given up (-1: never); the messaging default where absent. */
  maxDeliver?: number;
  /** Phantom field: carries the message type only, never set. */
  readonly payload?: T;
}

/**
 * How long a producer keeps trying to queue a message while JetStream cannot take it because
 * the stream is electing a new leader (a server of a NATS cluster was lost): nats-server
 * elects one within a few seconds. Past it, the producer gives up with a 503.
 */
export const QUEUE_FAILOVER_MS = 10_000;

function workQueue<T>(spec: Omit<WorkQueueSpec<T>, 'payload'>): WorkQueueSpec<T> {
  return spec;
}

export const WorkQueues = {
  // Workers ack a completion the moment they take it: a message only goes unacked when it
  // reached a worker that died before reading it, and it should go to another one soon.
  inference: workQueue<InferenceWork>({ stream: 'INFERENCE_WORK', subject: 'work.inference.v1', consumer: 'inference-workers', ackWaitMs: 10_000 }),
  // Training workers heartbeat every few seconds: a crashed one's job is redelivered soon.
  training: workQueue<TrainingWorkItem>({ stream: 'TRAINING_WORK', subject: 'work.training.v1', consumer: 'training-workers', ackWaitMs: 20_000 }),
  // Tinker calls (forward_backward, optim_step, ...), one future per message; the worker that
  // holds a training client runs its calls in seq_id order and says when one must wait.
  // A call handed back because its turn has not come is delivered again: never given up on.
  tinker: workQueue<TinkerWorkItem>({ stream: 'TINKER_WORK', subject: 'work.tinker.v1', consumer: 'tinker-workers', ackWaitMs: 20_000, maxDeliver: -1 }),
} as const;

export type WorkQueueName = keyof typeof WorkQueues;

/** The concrete stream name and subject for a deployment's prefix ('' in production). */
export function resolveWorkQueue<T>(spec: WorkQueueSpec<T>, prefix: string): WorkQueueSpec<T> {
  if (!prefix) return spec;
  return { ...spec, stream: `${prefix.toUpperCase()}_${spec.stream}`, subject: `${prefix.toLowerCase()}.${spec.subject}` };
}
