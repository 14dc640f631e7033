import type { ConsoleKeyView, ConsoleSessionView } from '@trainyard/contracts';
import type { StoredKey } from '../auth/api-keys.repository';
import type { SessionView } from '../auth/console-sessions.service';

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
