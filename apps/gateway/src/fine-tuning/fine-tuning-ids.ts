/**
 * OpenAI's ids for our uuids: `ftjob-`, `ftevent-` or `ftckpt-` and the uuid's 32 hex digits.
 * The mapping is one to one, so no id is stored twice and a job is found from either form.
 */
export type FineTuningIdPrefix = 'ftjob' | 'ftevent' | 'ftckpt';

export function toFineTuningId(prefix: FineTuningIdPrefix, uuid: string): string {
  return `${prefix}-${uuid.replaceAll('-', '').toLowerCase()}`;
}

/** The uuid behind an id of that prefix; undefined for anything else. */
export function fromFineTuningId(prefix: FineTuningIdPrefix, id: string): string | undefined {
  const match = new RegExp(`^${prefix}-([0-9a-f]{32})$`).exec(id);
  if (!match) return undefined;
  const hex = match[1];
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
