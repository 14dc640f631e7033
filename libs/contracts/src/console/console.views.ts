// The console's own routes under /console/api: the gateway answers with these shapes and the
// web console reads them.

/** A key as the console lists it: never its secret or hash, only the prefix that tells keys apart. */
export interface ConsoleKeyView {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** A key just created: the only time its secret is shown. */
export type CreatedConsoleKeyView = ConsoleKeyView & { key: string };

export interface ConsoleSessionView {
  entity: string;
  /** The key the session signed in with: revoking it ends the session. */
  key_id: string;
  /** Kept in memory by the console and sent back as x-csrf-token on every state-changing request. */
  csrf_token: string;
  expires_at: string;
}
