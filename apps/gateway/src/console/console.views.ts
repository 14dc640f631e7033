import type { StoredKey } from '../auth/api-keys.repository';
import type { SessionView } from '../auth/console-sessions.service';

/** A key as the console lists it: never its secret or hash, only the prefix that tells keys apart. */
export interface ConsoleKeyView {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface ConsoleSessionView {
  entity: string;
  /** The key the session signed in with: revoking it ends the session. */
  key_id: string;
  /** Kept in memory by the console and sent back as x-csrf-token on every state-changing request. */
  csrf_token: string;
  expires_at: string;
}

export function toKeyView(key: StoredKey): ConsoleKeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}

export function toSessionView(session: SessionView): ConsoleSessionView {
  return { entity: session.entityName, key_id: session.apiKeyId, csrf_token: session.csrfToken, expires_at: session.expiresAt.toISOString() };
}
