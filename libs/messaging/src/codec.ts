import { JSONCodec } from 'nats';

/**
 * The one wire encoding of every message the system's own code sends outside Nest's RPC
 * (events, work items, probes, scatter-gather): UTF-8 JSON.
 */
const json = JSONCodec<unknown>();

export function encodeMessage<T>(value: T): Uint8Array {
  return json.encode(value);
}

/** Throws when the bytes are not JSON; the type is the sender's word, as with any message. */
export function decodeMessage<T>(data: Uint8Array): T {
  return json.decode(data) as T;
}
