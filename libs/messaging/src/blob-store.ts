import { Inject, Injectable } from '@nestjs/common';
import { BlobRef, ErrorCode, ServiceError } from '@trainyard/contracts';
import { NatsConnection, nanos, ObjectStore, StorageType } from 'nats';
import { createHash, randomUUID } from 'node:crypto';
import { MESSAGING_OPTIONS, MessagingOptions, NATS_CONNECTION } from './nats.tokens';

/** How long a parked blob may wait for its reader before JetStream drops it. */
export const BLOB_TTL_MS = 15 * 60_000;

/**
 * Hands payloads larger than a NATS message (1 MB by default) from one process to
 * another through a JetStream object store: the sender parks the bytes and sends a small
 * BlobRef; the receiver takes them (read, verify, delete). The bucket's TTL cleans up
 * after a receiver that never came.
 */
@Injectable()
export class BlobStore {
  readonly bucket: string;
  private readonly replicas: number;
  private store?: Promise<ObjectStore>;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(MESSAGING_OPTIONS) options: Pick<MessagingOptions, 'streamPrefix'> & Partial<Pick<MessagingOptions, 'jetstreamReplicas'>>,
  ) {
    this.bucket = options.streamPrefix ? `${options.streamPrefix.toUpperCase()}_BLOBS` : 'BLOBS';
    this.replicas = options.jetstreamReplicas ?? 1;
  }

  async put(data: Uint8Array): Promise<BlobRef> {
    const name = randomUUID();
    await (await this.open()).putBlob({ name }, data);
    return { bucket: this.bucket, name, size: data.byteLength, sha256: sha256(data) };
  }

  async putJson<T>(value: T): Promise<BlobRef<T>> {
    // The type rides along on the reference only (a phantom field): the bytes are `value`'s.
    return (await this.put(Buffer.from(JSON.stringify(value), 'utf8'))) as BlobRef<T>;
  }

  /** Reads a blob once and deletes it; fails if it is gone or not what the sender parked. */
  async take(ref: BlobRef): Promise<Buffer> {
    const data = await this.read(ref);
    await this.discard(ref);
    return data;
  }

  async takeJson<T>(ref: BlobRef<T>): Promise<T> {
    return parseJson(await this.take(ref));
  }

  /**
   * Reads a blob and leaves it for the next reader, who takes it: one blob handed over to two
   * processes (the orchestrator validates an RL job's groups, the registry stores them).
   */
  async read(ref: BlobRef): Promise<Buffer> {
    if (ref.bucket !== this.bucket) {
      throw new ServiceError(ErrorCode.Internal, `Blob ${ref.name} is in bucket ${ref.bucket}, not ${this.bucket}`);
    }
    const data = await (await this.open()).getBlob(ref.name);
    if (!data) {
      throw new ServiceError(ErrorCode.InvalidRequest, `The uploaded payload ${ref.name} expired before it was read; send it again`);
    }
    if (data.byteLength !== ref.size || sha256(data) !== ref.sha256) {
      throw new ServiceError(ErrorCode.Internal, `Blob ${ref.name} does not match its size or digest`);
    }
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }

  async readJson<T>(ref: BlobRef<T>): Promise<T> {
    return parseJson(await this.read(ref));
  }

  /** Deletes a blob nobody will read (best effort: the bucket's TTL removes it otherwise). */
  async discard(ref: BlobRef): Promise<void> {
    if (ref.bucket !== this.bucket) return;
    await (await this.open()).delete(ref.name).catch(() => undefined);
  }

  /** Creates the bucket on first use (idempotent across replicas); a failure is retried next time. */
  private open(): Promise<ObjectStore> {
    this.store ??= this.nc
      .jetstream()
      .views.os(this.bucket, { ttl: nanos(BLOB_TTL_MS), storage: StorageType.File, replicas: this.replicas })
      .catch((err) => {
        this.store = undefined;
        throw err;
      });
    return this.store;
  }
}

function parseJson<T>(data: Buffer): T {
  return JSON.parse(data.toString('utf8')) as T;
}

export function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
