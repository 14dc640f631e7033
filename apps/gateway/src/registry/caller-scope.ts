import type { CallerScope } from '@trainyard/contracts';
import type { Caller } from '../auth/caller';

/** The caller as every registry message carries it; the registry enforces ownership with it. */
export function scopeOf(caller: Caller): CallerScope {
  return { entity_id: caller.entityId, entity_name: caller.entityName };
}
