import type { Request } from 'express';
import { canonicalJson, requestFingerprint } from './request-fingerprint';

const request = (body: unknown, url = '/v1/preview/models', file?: { buffer: Buffer; originalname: string }) =>
  ({ method: 'POST', originalUrl: url, body, file }) as unknown as Request;

describe('requestFingerprint', () => {
  it('ignores the order of body keys, at any depth', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: 3 } })).toBe('{"a":{"c":3,"d":[2,{"x":0,"y":1}]},"b":1}');
    expect(requestFingerprint(request({ name: 'a', project: 'p' }))).toBe(requestFingerprint(request({ project: 'p', name: 'a' })));
  });

  it('tells apart another body, another path and another uploaded file', () => {
    const base = requestFingerprint(request({ name: 'a' }));
    expect(requestFingerprint(request({ name: 'b' }))).not.toBe(base);
    expect(requestFingerprint(request({ name: 'a' }, '/v1/files'))).not.toBe(base);
    const file = (text: string) => request({ purpose: 'fine-tune' }, '/v1/files', { buffer: Buffer.from(text), originalname: 'a.jsonl' });
    expect(requestFingerprint(file('one'))).not.toBe(requestFingerprint(file('two')));
  });
});
