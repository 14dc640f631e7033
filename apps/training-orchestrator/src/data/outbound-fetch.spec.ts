import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AllowList, allowEntryProblem, isForbiddenAddress, LookupAddress, OutboundFetch, OutboundFetchError, OutboundTooLarge } from './outbound-fetch';

// Only loopback traffic: every other address in these tests is refused before any
// connection is made, which is what they check.

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

describe('OutboundFetch', () => {
  let server: Server;
  let port: number;
  let handler: Handler;
  let hits: string[];

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      handler(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));
  beforeEach(() => {
    hits = [];
    handler = (_, res) => res.end('data');
  });

  /** A fake DNS: names map to addresses; the calls are recorded. */
  function dns(table: Record<string, string[]>) {
    const asked: string[] = [];
    const resolve = async (hostname: string): Promise<LookupAddress[]> => {
      asked.push(hostname);
      const found = table[hostname];
      if (!found) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    return { resolve, asked };
  }

  const fetcher = (allow: string[], resolve?: (h: string) => Promise<LookupAddress[]>, timeoutMs = 5_000) =>
    new OutboundFetch({ allowList: new AllowList(allow), timeoutMs, resolve });

  async function refusal(promise: Promise<unknown>): Promise<string> {
    const err = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OutboundFetchError);
    return (err as OutboundFetchError).reason;
  }

  it('refuses every forbidden address class given as a literal, without connecting', async () => {
    const literals = [
      `http://127.0.0.1:${port}/`,
      `http://127.9.9.9:${port}/`,
      `http://0.0.0.0:${port}/`,
      'http://10.1.2.3/',
      'http://172.16.0.1/',
      'http://172.31.255.255/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/',
      'http://100.100.100.200/',
      'http://224.0.0.1/',
      `http://[::1]:${port}/`,
      'http://[fd00::1]/',
      'http://[fd00:ec2::254]/',
      'http://[fe80::1]/',
      `http://[::ffff:127.0.0.1]:${port}/`,
      'http://[::ffff:169.254.169.254]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      // Other spellings of 127.0.0.1 the URL parser normalises.
      `http://0x7f.1:${port}/`,
      `http://2130706433:${port}/`,
      `http://017700000001:${port}/`,
    ];
    const { resolve, asked } = dns({});
    const f = fetcher([], resolve);
    for (const url of literals) {
      expect(await refusal(f.fetch(new URL(url), { maxBytes: 100 }))).toMatch(/not allowed/);
    }
    expect(asked).toEqual([]);
    expect(hits).toEqual([]);
  });

  it('refuses a host name that resolves to a forbidden address, even when only one of its addresses is', async () => {
    const { resolve } = dns({
      'metadata.test': ['169.254.169.254'],
      'loop.test': ['127.0.0.1'],
      'mixed.test': ['93.184.216.34', '10.0.0.7'],
      'v6.test': ['fd12:3456::1'],
    });
    const f = fetcher([], resolve);
    for (const host of ['metadata.test', `loop.test:${port}`, 'mixed.test', 'v6.test']) {
      expect(await refusal(f.fetch(new URL(`http://${host}/`), { maxBytes: 100 }))).toMatch(/not allowed/);
    }
    expect(hits).toEqual([]);
  });

  it('connects to the address it checked, not to a second DNS answer', async () => {
    let answers = 0;
    // First answer loopback (allowed by range), any later one the metadata address.
    const rebinding = async (): Promise<LookupAddress[]> => [{ address: answers++ === 0 ? '127.0.0.1' : '169.254.169.254', family: 4 }];
    const f = fetcher(['127.0.0.0/8'], rebinding);
    const res = await f.fetch(new URL(`http://rebind.test:${port}/x`), { maxBytes: 100 });
    expect(res.body.toString()).toBe('data');
    expect(answers).toBe(1);
    expect(hits).toEqual(['GET /x']);
  });

  it('fetches from hosts and ranges on the allow list', async () => {
    const { resolve } = dns({ 'data.test': ['127.0.0.1'] });
    expect((await fetcher(['data.test'], resolve).fetch(new URL(`http://data.test:${port}/a`), { maxBytes: 100 })).body.toString()).toBe('data');
    expect((await fetcher(['*.test'], resolve).fetch(new URL(`http://data.test:${port}/b`), { maxBytes: 100 })).status).toBe(200);
    expect((await fetcher(['127.0.0.1'], resolve).fetch(new URL(`http://127.0.0.1:${port}/c`), { maxBytes: 100 })).status).toBe(200);
    expect((await fetcher(['127.0.0.0/8'], resolve).fetch(new URL(`http://data.test:${port}/d`), { maxBytes: 100 })).status).toBe(200);
    expect(hits).toEqual(['GET /a', 'GET /b', 'GET /c', 'GET /d']);
    // An allowed name does not allow others that resolve to the same address.
    const other = dns({ 'data.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'] });
    expect(await refusal(fetcher(['data.test'], other.resolve).fetch(new URL(`http://other.test:${port}/e`), { maxBytes: 100 }))).toMatch(/not allowed/);
    expect(hits).toHaveLength(4);
  });

  it('checks every redirect: to a forbidden literal, to a name resolving to one, and to a forbidden scheme', async () => {
    const { resolve, asked } = dns({ 'data.test': ['127.0.0.1'], 'inside.test': ['10.0.0.5'] });
    const f = fetcher(['data.test'], resolve);
    for (const target of [`http://127.0.0.1:${port}/secret`, 'http://169.254.169.254/latest/meta-data/', 'http://inside.test/', 'http://[::1]/', 'file:///etc/passwd']) {
      handler = (_, res) => res.writeHead(302, { location: target }).end();
      expect(await refusal(f.fetch(new URL(`http://data.test:${port}/start`), { maxBytes: 100 }))).toMatch(/not allowed|scheme/);
    }
    expect(hits.every((h) => h === 'GET /start')).toBe(true);
    expect(asked).toContain('inside.test');
  });

  it('follows allowed redirects up to a bound, dropping credentials when the origin changes', async () => {
    const { resolve } = dns({ 'a.test': ['127.0.0.1'], 'b.test': ['127.0.0.1'] });
    const f = fetcher(['a.test', 'b.test'], resolve);
    const seen: (string | undefined)[] = [];
    handler = (req, res) => {
      seen.push(req.headers.authorization);
      if (req.url === '/one') res.writeHead(307, { location: `http://b.test:${port}/two` }).end();
      else res.end('moved');
    };
    const res = await f.fetch(new URL(`http://a.test:${port}/one`), { maxBytes: 100, headers: { authorization: 'Basic c2VjcmV0' } });
    expect(res.body.toString()).toBe('moved');
    expect(res.url.href).toBe(`http://b.test:${port}/two`);
    expect(seen).toEqual(['Basic c2VjcmV0', undefined]);

    handler = (req, res) => res.writeHead(302, { location: `/loop${Number(req.url?.slice(5) || 0) + 1}` }).end();
    expect(await refusal(f.fetch(new URL(`http://a.test:${port}/loop0`), { maxBytes: 100 }))).toMatch(/more than 5 redirects/);
    expect(hits.filter((h) => h.startsWith('GET /loop'))).toHaveLength(6);
  });

  it('treats a non-2xx answer, an unknown name and the time limit as failures', async () => {
    const { resolve } = dns({ 'a.test': ['127.0.0.1'] });
    handler = (_, res) => res.writeHead(404).end('nope');
    expect(await refusal(fetcher(['a.test'], resolve).fetch(new URL(`http://a.test:${port}/`), { maxBytes: 100 }))).toMatch(/HTTP 404/);
    expect(await refusal(fetcher([], resolve).fetch(new URL('http://nowhere.test/'), { maxBytes: 100 }))).toMatch(/did not resolve/);
    handler = (_, res) => res.writeHead(200).write('partial');
    expect(await refusal(fetcher(['a.test'], resolve, 300).fetch(new URL(`http://a.test:${port}/`), { maxBytes: 100 }))).toMatch(/timed out/);
    const silentDns = () => new Promise<LookupAddress[]>(() => undefined);
    expect(await refusal(fetcher([], silentDns, 300).fetch(new URL('http://slow.test/'), { maxBytes: 100 }))).toMatch(/timed out/);
    // A caller's own signal (several fetches under one deadline) ends it too.
    const deadline = new AbortController();
    deadline.abort();
    expect(await refusal(fetcher(['a.test'], resolve).fetch(new URL(`http://a.test:${port}/`), { maxBytes: 100, signal: deadline.signal }))).toMatch(/timed out/);
  });

  it('stops reading past the size limit', async () => {
    const { resolve } = dns({ 'a.test': ['127.0.0.1'] });
    handler = (_, res) => res.end('x'.repeat(1000));
    await expect(fetcher(['a.test'], resolve).fetch(new URL(`http://a.test:${port}/`), { maxBytes: 999 })).rejects.toBeInstanceOf(OutboundTooLarge);
    handler = (_, res) => {
      res.writeHead(200);
      res.write('x'.repeat(600));
      res.end('x'.repeat(600));
    };
    await expect(fetcher(['a.test'], resolve).fetch(new URL(`http://a.test:${port}/`), { maxBytes: 999 })).rejects.toBeInstanceOf(OutboundTooLarge);
  });
});

describe('isForbiddenAddress and allow-list entries', () => {
  it('passes public addresses and refuses the internal ones', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '172.32.0.1', '100.128.0.1']) expect(isForbiddenAddress(a)).toBe(false);
    for (const a of ['127.0.0.1', '10.0.0.1', '172.20.1.1', '192.168.0.1', '169.254.169.254', '100.64.1.1', '0.0.0.0', '::1', '::', 'fd00:ec2::254', 'fe80::1', '::ffff:10.0.0.1']) {
      expect(isForbiddenAddress(a)).toBe(true);
    }
  });

  it('accepts host names, wildcard domains, addresses and CIDR ranges, and names what is wrong otherwise', () => {
    for (const e of ['wandb.internal', '*.corp.example', '10.0.0.5', '10.0.0.0/8', 'fd00::/8', '::1']) expect(allowEntryProblem(e)).toBeNull();
    expect(allowEntryProblem('10.0.0.0/33')).toMatch(/prefix/);
    expect(allowEntryProblem('host/8')).toMatch(/not an IP/);
    expect(allowEntryProblem('https:x')).toMatch(/neither/);
    expect(() => new AllowList(['bad entry'])).toThrow(/bad entry/);
  });
});
