import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import {
  ArtifactNotFoundError,
  ArtifactStore,
  assertDigest,
  isDigest,
  ObjectInfo,
  sha256Of,
  StoredObject,
  verified,
} from './artifact-store';
import { digestFile, writeVerified } from './files';

export interface S3ArtifactStoreOptions {
  bucket: string;
  /** Prepended to every key (`<prefix>sha256/<digest>`): several deployments may share a bucket. */
  prefix?: string;
  /** Empty for AWS itself; a URL for MinIO, Ceph, GCS's interoperability endpoint... */
  endpoint?: string;
  region: string;
  /** Empty: the SDK's default chain (environment, IRSA / workload identity, instance profile). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** `https://host/bucket/key` instead of `https://bucket.host/key`: what most self-hosted servers need. */
  forcePathStyle?: boolean;
}

/**
 * Objects in an S3-compatible bucket, under `<prefix>sha256/<digest>`. Only PutObject,
 * GetObject, HeadObject, ListObjectsV2 and DeleteObject are used, so any S3 API serves. A put
 * asks HeadObject first: content-addressed bytes already there need not travel again, and two
 * writers racing on one key write the same bytes.
 */
export class S3ArtifactStore implements ArtifactStore {
  readonly kind = 's3';
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(options: S3ArtifactStoreOptions) {
    this.bucket = options.bucket;
    this.prefix = `${options.prefix ?? ''}sha256/`;
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint || undefined,
      forcePathStyle: options.forcePathStyle ?? false,
      credentials: options.accessKeyId ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey ?? '' } : undefined,
      // Integrity is the store's own (every object is its SHA-256); the SDK's default CRC
      // trailers are not understood by every S3-compatible server.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async put(data: Uint8Array): Promise<StoredObject> {
    const sha256 = sha256Of(data);
    if (!(await this.has(sha256))) {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(sha256), Body: data, ContentLength: data.byteLength }));
    }
    return { sha256, bytes: data.byteLength };
  }

  async putFile(path: string): Promise<StoredObject> {
    const object = await digestFile(path);
    if (!(await this.has(object.sha256))) {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.key(object.sha256), Body: createReadStream(path), ContentLength: object.bytes }),
      );
    }
    return object;
  }

  async get(sha256: string): Promise<Buffer> {
    const body = await this.body(sha256);
    return verified(sha256, Buffer.from(await body.transformToByteArray()));
  }

  async getToFile(sha256: string, path: string): Promise<StoredObject> {
    const body = await this.body(sha256);
    return writeVerified(body as unknown as Readable, path, sha256);
  }

  async has(sha256: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(sha256) }));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  async delete(sha256: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(sha256) }));
  }

  async *list(): AsyncIterable<ObjectInfo> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token }));
      for (const item of page.Contents ?? []) {
        const sha256 = item.Key?.slice(this.prefix.length);
        if (isDigest(sha256)) yield { sha256, bytes: item.Size ?? 0, modifiedAt: item.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  destroy(): void {
    this.client.destroy();
  }

  private key(sha256: string): string {
    return this.prefix + assertDigest(sha256);
  }

  private async body(sha256: string) {
    try {
      const reply = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(sha256) }));
      if (!reply.Body) throw new ArtifactNotFoundError(sha256);
      return reply.Body;
    } catch (err) {
      if (isNotFound(err)) throw new ArtifactNotFoundError(sha256);
      throw err;
    }
  }
}

function isNotFound(err: unknown): boolean {
  if (err instanceof S3ServiceException) return err.$metadata.httpStatusCode === 404 || err.name === 'NoSuchKey' || err.name === 'NotFound';
  return false;
}
