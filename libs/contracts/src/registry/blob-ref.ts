/**
 * A payload too large for one NATS message (1 MB by default), parked in a JetStream object
 * store bucket by the sender. The receiver reads it once, checks size and digest, and
 * deletes it; the bucket's TTL removes whatever a crashed receiver left behind.
 */
export interface BlobRef<T = unknown> {
  bucket: string;
  name: string;
  size: number;
  /** Hex SHA-256 of the bytes, checked by the reader. */
  sha256: string;
  /** Phantom field: the type of the JSON parked, for typed put and take; never set. */
  readonly payload?: T;
}
