import { createHash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'ty_';
/** How much of a key may be shown after creation, to tell keys apart. */
const DISPLAY_CHARS = 10;

export interface NewSecret {
  secret: string;
  hash: string;
  prefix: string;
}

/** 256 random bits; high entropy is why a fast hash is the right one to store. */
export function generateSecret(): NewSecret {
  const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { secret, hash: hashSecret(secret), prefix: secret.slice(0, DISPLAY_CHARS) };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}
