import { Injectable, Logger } from '@nestjs/common';
import { ErrorCode, isUuid, ServiceError } from '@trainyard/contracts';
import { generateSecret, hashSecret } from './api-key.secret';
import { ApiKeysRepository, StoredKey } from './api-keys.repository';
import type { Caller } from './caller';

/** Writes of last_used_at are spaced out: a key in heavy use should not write on every call. */
const TOUCH_INTERVAL_MS = 60_000;

@Injectable()
export class ApiKeysService {
  private readonly logger = new Logger(ApiKeysService.name);

  constructor(private readonly keys: ApiKeysRepository) {}

  /** Creates a key for an entity (creating the entity on first use); the secret is returned only here. */
  async create(entityName: string, name: string): Promise<{ key: StoredKey; secret: string }> {
    const { secret, hash, prefix } = generateSecret();
    const key = await this.keys.create(entityName, name, hash, prefix);
    return { key, secret };
  }

  list(entityName?: string): Promise<StoredKey[]> {
    return this.keys.list(entityName);
  }

  revoke(idOrPrefix: string): Promise<StoredKey[]> {
    return this.keys.revoke(idOrPrefix);
  }

  /** Revokes one of the entity's own keys; another entity's key id is not found, as is an unknown one. */
  async revokeOwned(entityId: string, id: string): Promise<StoredKey> {
    const key = isUuid(id) ? await this.keys.revokeOwned(entityId, id) : null;
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
   * secret itself. Revocation takes effect on the next request.
   */
  async verify(secret: string): Promise<Caller> {
    const key = await this.keys.findByHash(hashSecret(secret));
    if (!key) throw unauthorized('Unknown API key');
    if (key.revokedAt) throw unauthorized(`API key ${key.prefix}... was revoked`);
    this.touch(key);
    return { entityId: key.entityId, entityName: key.entityName, apiKeyId: key.id };
  }

  private touch(key: StoredKey): void {
    const now = new Date();
    if (key.lastUsedAt && now.getTime() - key.lastUsedAt.getTime() < TOUCH_INTERVAL_MS) return;
    this.keys.touch(key.id, now).catch((err: Error) => this.logger.warn(`Could not record key use: ${err.message}`));
  }
}

function unauthorized(message: string): ServiceError {
  return new ServiceError(ErrorCode.Unauthorized, message);
}
