/** Nest injection tokens of the messaging module. */
export const NATS_CLIENT = Symbol('NATS_CLIENT');
export const NATS_CONNECTION = Symbol('NATS_CONNECTION');
export const MESSAGING_OPTIONS = Symbol('MESSAGING_OPTIONS');

export interface MessagingOptions {
  /** nats://host:port, comma-separated for a cluster. */
  servers: string[];
  /** Shown in the NATS server's connection list: the app's name. */
  connectionName: string;
  /** Default time a request may take before it fails with `timeout` (HTTP 504). */
  rpcTimeoutMs: number;
  /** Prefix for JetStream stream names and work subjects ('' in production). */
  streamPrefix: string;
  /** Servers that each hold every stream and bucket this app creates (3 on a three-server cluster). */
  jetstreamReplicas: number;
}
