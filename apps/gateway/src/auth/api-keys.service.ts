import { Injectable, Logger, Optional } from '@nestjs/common';
import { ErrorCode, isUuid, ServiceError } from '@trainyard/contracts';
import { ApiKeyCache, CachedKey } from './api-key-cache';
import { generateSecret, hashSecret } from './api-key.secret';
import { ApiKeysRepository, StoredKey } from './api-keys.repository';
import type { Caller } from './caller';

/** Writes of last_used_at are spaced out: a key in heavy use should not write on every call. */
const TOUCH_INTERVAL_MS = 60_000;

@Injectable()
export class ApiKeysService {
  private readonly logger = new Logger(ApiKeysService.name);

  /** The key command has no cache (it makes no requests): every verify there reads the database. */
  constructor(
    private readonly keys: ApiKeysRepository,
    @Optional() private readonly cache?: ApiKeyCache,
  ) {}

  /** Creates a key for an entity (creating the entity on first use); the secret is returned only here. */
  async create(entityName: string, name: string): Promise<{ key: StoredKey; secret: string }> {
    const { secret, hash, prefix } = generateSecret();
    const key = await this.keys.create(entityName, name, hash, prefix);
    return { key, secret };
  }

  list(entityName?: string): Promise<StoredKey[]> {
    return this.keys.list(entityName);
  }

  /**
   * The revoked keys leave this replica's cache before this returns (other replicas drop them
   * on the database's notification). Should the revocation fail halfway, the whole cache goes:
   * whether it was written is not known.
   */
  async revoke(idOrPrefix: string): Promise<StoredKey[]> {
    let revoked: StoredKey[];
    try {
      revoked = await this.keys.revoke(idOrPrefix);
    } catch (err) {
      this.cache?.clear();
      throw err;
    }
    for (const key of revoked) this.cache?.evictApiKey(key.id);
    return revoked;
  }

  /** Revokes one of the entity's own keys; another entity's key id is not found, as is an unknown one. */
  async revokeOwned(entityId: string, id: string): Promise<StoredKey> {
    if (!isUuid(id)) throw ServiceError.notFound(`API key ${id} not found`);
    let key: StoredKey | null;
    try {
      key = await this.keys.revokeOwned(entityId, id);
    } finally {
      // After the write, whatever came of it: evicting first would let a request in between cache the key again.
      this.cache?.evictApiKey(id);
    }
    if (!key) throw ServiceError.notFound(`API key ${id} not found`);
    return key;
  }

  /** The caller an `Authorization: Bearer <key>` header stands for. */
  async authenticate(authorization: string | undefined): Promise<Caller> {
    if (!authorization) {
      throw unauthorized('Missing API key: send "Authorization: Bearer <key>"');
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw unauthorized('Malformed Authorization header: expected "Bearer <key>"');
    return this.verify(match[1]);
  }

  /**
   * The caller a key secret stands for (the console signs in with one). Looks the key up by
   * its hash, so the comparison happens inside an index lookup on a digest and never on the
   * secret itself. Keys that verified are kept in memory (ApiKeyCache) only while the
   * database's notifications of key changes are being heard: a revocation made through this
   * replica takes effect on its next request, one made elsewhere (another replica, the key
   * command, SQL) as soon as its notification arrives, milliseconds after the commit.
   */
  async verify(secret: string): Promise<Caller> {
    const hash = hashSecret(secret);
    const cached = this.cache?.get(hash);
    if (cached) {
      this.touch(cached.caller.apiKeyId, cached);
      return { ...cached.caller };
    }
    const ticket = this.cache?.ticket();
    const key = await this.keys.findByHash(hash);
    if (!key) throw unauthorized('Unknown API key');
    if (key.revokedAt) throw unauthorized(`API key ${key.prefix}... was revoked`);
    const verified: CachedKey = { caller: { entityId: key.entityId, entityName: key.entityName, apiKeyId: key.id }, lastUsedAt: key.lastUsedAt };
    this.touch(key.id, verified);
    this.cache?.set(hash, verified, ticket);
    return { ...verified.caller };
  }

  /** Writes last_used_at if it is older than the interval, and remembers that it did. */
  private touch(id: string, use: { lastUsedAt: Date | null }): void {
    const now = new Date();
    if (use.lastUsedAt && now.getTime() - use.lastUsedAt.getTime() < TOUCH_INTERVAL_MS) return;
    use.lastUsedAt = now;
    this.keys.touch(id, now).catch((err: Error) => this.logger.warn(`Could not record key use: ${err.message}`));
  }
}

function unauthorized(message: string): ServiceError {
  return new ServiceError(ErrorCode.Unauthorized, message);
}
