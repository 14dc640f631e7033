import { parseKeysArgs } from './keys-args';

describe('parseKeysArgs', () => {
  it('reads each command and its options', () => {
    expect(parseKeysArgs(['create', '--entity', 'acme', '--name', 'ci', '--json'])).toEqual({ command: 'create', entity: 'acme', name: 'ci', json: true });
    expect(parseKeysArgs(['create', '--entity', 'acme'])).toEqual({ command: 'create', entity: 'acme', name: 'default', json: false });
    expect(parseKeysArgs(['list'])).toEqual({ command: 'list', entity: undefined });
    expect(parseKeysArgs(['list', '--entity', 'acme'])).toEqual({ command: 'list', entity: 'acme' });
    expect(parseKeysArgs(['revoke', 'ty_abc'])).toEqual({ command: 'revoke', target: 'ty_abc' });
  });

  it('asks for the usage with --help or -h, whatever else is given', () => {
    for (const args of [['--help'], ['-h'], ['create', '--help'], ['revoke', '-h']]) expect(parseKeysArgs(args)).toEqual({ command: 'help' });
  });

  it('names what is wrong: an unknown option or command, a missing or extra argument', () => {
    expect(parseKeysArgs(['--bogus'])).toEqual({ command: 'invalid', message: "Unknown option '--bogus'" });
    expect(parseKeysArgs(['list', '-x'])).toEqual({ command: 'invalid', message: "Unknown option '-x'" });
    expect(parseKeysArgs(['create', '--entity'])).toMatchObject({ command: 'invalid', message: expect.stringContaining('--entity') });
    expect(parseKeysArgs(['rotate'])).toEqual({ command: 'invalid', message: 'Unknown command "rotate"' });
    expect(parseKeysArgs([])).toEqual({ command: 'invalid', message: 'No command given' });
    expect(parseKeysArgs(['create'])).toEqual({ command: 'invalid', message: 'create needs --entity <entity>' });
    expect(parseKeysArgs(['revoke'])).toEqual({ command: 'invalid', message: 'revoke needs the id or prefix of the key' });
    expect(parseKeysArgs(['revoke', 'a', 'b'])).toEqual({ command: 'invalid', message: 'Unexpected argument "b"' });
  });
});
