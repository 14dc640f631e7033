import { parseArgs } from 'node:util';

export const KEYS_USAGE = `Usage:
  keys create --entity <entity> [--name <name>] [--json]   create a key; the secret is printed once
  keys list [--entity <entity>]                             list keys (never their secrets)
  keys revoke <key id or prefix>                            revoke a key; it stops working at once
  keys --help                                               this text

DATABASE_URL names the database (a postgresql:// URL).`;

export type KeysCommand =
  | { command: 'create'; entity: string; name: string; json: boolean }
  | { command: 'list'; entity?: string }
  | { command: 'revoke'; target: string };

/** What the command line asks for: a command, the usage (for --help, exit 0), or a mistake to report with the usage (exit 2). */
export type KeysArgs = KeysCommand | { command: 'help' } | { command: 'invalid'; message: string };

export function parseKeysArgs(args: string[]): KeysArgs {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (err) {
    // parseArgs' own messages name the option ("Unknown option '--x'"); its advice about '--' does not apply here.
    return { command: 'invalid', message: (err as Error).message.replace(/\. To specify a positional argument.*$/s, '') };
  }
  const { positionals, values } = parsed;
  if (values.help) return { command: 'help' };
  const [command, target, ...extra] = positionals;
  if (extra.length > 0) return { command: 'invalid', message: `Unexpected argument "${extra[0]}"` };
  switch (command) {
    case 'create':
      if (!values.entity) return { command: 'invalid', message: 'create needs --entity <entity>' };
      if (target !== undefined) return { command: 'invalid', message: `Unexpected argument "${target}"` };
      return { command, entity: values.entity, name: values.name ?? 'default', json: values.json ?? false };
    case 'list':
      if (target !== undefined) return { command: 'invalid', message: `Unexpected argument "${target}"` };
      return { command, entity: values.entity };
    case 'revoke':
      if (!target) return { command: 'invalid', message: 'revoke needs the id or prefix of the key' };
      return { command, target };
    case undefined:
      return { command: 'invalid', message: 'No command given' };
    default:
      return { command: 'invalid', message: `Unknown command "${command}"` };
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: { entity: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
}
