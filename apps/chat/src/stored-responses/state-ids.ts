import { randomBytes } from 'node:crypto';

/** Ids in OpenAI's style, as the gateway makes them for responses and items: a prefix and random hex. */
export function newStateId(prefix: 'conv'): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
