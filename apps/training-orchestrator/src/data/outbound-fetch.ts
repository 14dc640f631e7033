import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns';
import http, { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';

/**
 * Address ranges a caller's URL may not reach unless the operator allows them: this
 * machine, private networks, link-local (cloud metadata at 169.254.169.254 included),
 * carrier-grade NAT (Alibaba's metadata at 100.100.100.200 included), unique-local IPv6
 * (AWS's IPv6 metadata at fd00:ec2::254 included), multicast, reserved and documentation
 * ranges, and the IPv6 forms that embed an IPv4 address (NAT64, 6to4). IPv4-mapped IPv6
 * addresses are checked as the IPv4 address they carry.
 */
const FORBIDDEN_RANGES: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.88.99.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['64:ff9b::', 96, 'ipv6'],
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['2002::', 16, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

const FORBIDDEN = new BlockList();
for (const [network, prefix, family] of FORBIDDEN_RANGES) FORBIDDEN.addSubnet(network, prefix, family);

function familyOf(address: string): 'ipv4' | 'ipv6' {
  return isIP(address) === 6 ? 'ipv6' : 'ipv4';
}

/** True for an address in one of the ranges above. */
export function isForbiddenAddress(address: string): boolean {
  return FORBIDDEN.check(address, familyOf(address));
}

const HOST_NAME = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** Why an allow-list entry is not a host name, an IP address or a CIDR range; null when it is one. */
export function allowEntryProblem(entry: string): string | null {
  const [address, prefix, ...rest] = entry.split('/');
  if (rest.length > 0) return 'has more than one "/"';
  if (prefix !== undefined) {
    const bits = isIP(address) === 4 ? 32 : isIP(address) === 6 ? 128 : 0;
    if (bits === 0) return 'is a range whose address is not an IP address';
    if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits) return `has a prefix length that is not 0..${bits}`;
    return null;
  }
  if (isIP(address) || HOST_NAME.test(address)) return null;
  return 'is neither a host name (optionally *.domain), an IP address nor a CIDR range';
}

/**
 * The operator's exceptions (SFT_DATA_ALLOWED_HOSTS): host names, allowed whatever they
 * resolve to ("*.example.com" for its subdomains), and IP addresses or CIDR ranges.
 */
export class AllowList {
  private readonly names: string[] = [];
  private readonly suffixes: string[] = [];
  private readonly addresses = new BlockList();

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const problem = allowEntryProblem(entry);
      if (problem) throw new Error(`allow-list entry ${JSON.stringify(entry)} ${problem}`);
      const [address, prefix] = entry.split('/');
      if (prefix !== undefined) this.addresses.addSubnet(address, Number(prefix), familyOf(address));
      else if (isIP(address)) this.addresses.addAddress(address, familyOf(address));
      else if (address.startsWith('*.')) this.suffixes.push(address.slice(1).toLowerCase());
      else this.names.push(address.toLowerCase());
    }
  }

  allowsHost(host: string): boolean {
    const name = host.toLowerCase().replace(/\.$/, '');
    return this.names.includes(name) || this.suffixes.some((suffix) => name.endsWith(suffix));
  }

  allowsAddress(address: string): boolean {
    return this.addresses.check(address, familyOf(address));
  }
}

export type LookupAddress = { address: string; family: number };
/** dns.lookup with `all: true`; tests give their own. */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

const systemResolve: ResolveHost = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** A fetch that failed or was refused; `reason` is for the operator's log, never for the caller. */
export class OutboundFetchError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** The body went past the size limit. */
export class OutboundTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`larger than ${limit} bytes`);
  }
}

export interface OutboundRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  maxBytes: number;
  /** Ends the fetch early (several fetches sharing one deadline), besides the fetcher's own time limit. */
  signal?: AbortSignal;
}

export interface OutboundResponse {
  url: URL;
  status: number;
  body: Buffer;
}

export interface OutboundFetchOptions {
  allowList: AllowList;
  /** Bound on the whole fetch, redirects included. */
  timeoutMs: number;
  maxRedirects?: number;
  resolve?: ResolveHost;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Fetches URLs a caller chose, without letting them reach inside the network. Every hop
 * (the first request and each redirect, followed here, at most maxRedirects) is checked:
 * http(s) only; an IP literal must not be in a forbidden range; a host name is resolved
 * here, every address it resolves to must pass, and the connection goes to exactly those
 * checked addresses, so a second DNS answer (rebinding) cannot change where it goes. Hosts
 * and ranges on the allow list pass. Only a 2xx answer counts; anything else, like a
 * refusal, a DNS or network failure or the time limit, is an OutboundFetchError.
 */
export class OutboundFetch {
  private readonly resolve: ResolveHost;
  private readonly maxRedirects: number;

  constructor(private readonly options: OutboundFetchOptions) {
    this.resolve = options.resolve ?? systemResolve;
    this.maxRedirects = options.maxRedirects ?? 5;
  }

  async fetch(url: URL, request: OutboundRequest): Promise<OutboundResponse> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    let current = url;
    let method = request.method ?? 'GET';
    let body = request.body;
    let headers = { ...request.headers };
    for (let hop = 0; ; hop++) {
      const res = await this.once(current, method, headers, body, signal);
      if (!REDIRECTS.has(res.statusCode ?? 0)) {
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) {
          res.destroy();
          throw new OutboundFetchError(`${current.origin} answered HTTP ${status}`);
        }
        return { url: current, status, body: await readCapped(res, request.maxBytes, signal) };
      }
      res.destroy();
      if (hop >= this.maxRedirects) throw new OutboundFetchError(`more than ${this.maxRedirects} redirects`);
      const location = res.headers.location;
      if (!location) throw new OutboundFetchError(`HTTP ${res.statusCode} without a Location`);
      let next: URL;
      try {
        next = new URL(location, current);
      } catch {
        throw new OutboundFetchError('a redirect to an invalid URL');
      }
      // As browsers do: 303 (and 301/302 after a POST) turn into a GET without the body;
      // credentials never follow a redirect to another origin.
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      if (next.origin !== current.origin) headers = withoutCredentials(headers);
      current = next;
    }
  }

  private async once(url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<IncomingMessage> {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundFetchError(`scheme ${url.protocol} is not http(s)`);
    if (url.username || url.password) throw new OutboundFetchError('credentials in the URL');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: LookupAddress[];
    if (isIP(host)) {
      addresses = [{ address: host, family: isIP(host) }];
    } else {
      try {
        addresses = await untilAborted(this.resolve(host), signal);
      } catch (err) {
        throw new OutboundFetchError(signal.aborted ? 'timed out' : `${host} did not resolve: ${(err as Error).message}`);
      }
      if (addresses.length === 0) throw new OutboundFetchError(`${host} resolved to no address`);
    }
    if (!this.options.allowList.allowsHost(host)) {
      const refused = addresses.find((a) => isForbiddenAddress(a.address) && !this.options.allowList.allowsAddress(a.address));
      if (refused) throw new OutboundFetchError(`${host} is ${refused.address}, which is not allowed`);
    }
    const client = url.protocol === 'https:' ? https : http;
    const outgoing: OutgoingHttpHeaders = { ...headers };
    if (body !== undefined) outgoing['content-length'] = Buffer.byteLength(body);
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = client.request(url, {
        method,
        headers: outgoing,
        signal,
        agent: false,
        // Connect to the addresses checked above, never to a fresh DNS answer.
        lookup: (_hostname, options, callback) => {
          if ((options as { all?: boolean }).all) (callback as (err: null, all: LookupAddress[]) => void)(null, addresses);
          else callback(null, addresses[0].address, addresses[0].family);
        },
      });
      req.once('response', resolve);
      // `on`: a request can fail more than once (an abort, then the socket), after the response too.
      req.on('error', (err) => reject(new OutboundFetchError(signal.aborted ? 'timed out' : `${url.origin}: ${err.message}`)));
      req.end(body);
    });
  }
}

/** DNS lookups cannot be cancelled; the caller stops waiting for one when the signal fires. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !['authorization', 'cookie'].includes(name.toLowerCase())));
}

async function readCapped(res: IncomingMessage, limit: number, signal: AbortSignal): Promise<Buffer> {
  if (Number(res.headers['content-length'] ?? 0) > limit) {
    res.destroy();
    throw new OutboundTooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      size += (chunk as Buffer).byteLength;
      if (size > limit) {
        res.destroy();
        throw new OutboundTooLarge(limit);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof OutboundTooLarge) throw err;
    throw new OutboundFetchError(signal.aborted ? 'timed out' : `reading the body: ${(err as Error).message}`);
  }
  return Buffer.concat(chunks);
}
