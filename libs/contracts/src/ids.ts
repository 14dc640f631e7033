const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids of models, checkpoints, jobs and events are uuids; anything else names nothing (and must not reach a uuid column). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

const STATE_ID = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * Ids of stored responses, conversations and their items are letters, digits, `_` and `-`
 * (ours, `resp_...`, and the ones OpenAI's clients make); anything else names nothing (and
 * must not reach a query: PostgreSQL refuses a NUL character in text).
 */
export function isStateId(value: string): boolean {
  return STATE_ID.test(value);
}
