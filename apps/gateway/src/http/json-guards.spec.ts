import { fromBodyParser } from './body-parser-errors';
import { jsonDepthExceeds, JsonTooDeepError, MAX_JSON_DEPTH, reservedKeyPath, refuseDeepJson, refuseReservedKeys } from './json-guards';
import { ServiceError } from '@trainyard/contracts';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('JSON depth guard', () => {
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(jsonDepthExceeds(nested(3), 3)).toBe(false);
    expect(jsonDepthExceeds(nested(4), 3)).toBe(true);
    expect(jsonDepthExceeds('{"a":{"b":[1]}}', 2)).toBe(true);
    expect(jsonDepthExceeds(`{"a":"${'['.repeat(100)}\\"[[["}`, 1)).toBe(false);
  });

  it('refuses a body nested past the limit, as a 422 naming the limit', () => {
    const body = Buffer.from(`{"messages":${nested(MAX_JSON_DEPTH)}}`);
    let thrown: unknown;
    try {
      refuseDeepJson({} as never, {} as never, body, 'utf-8');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(JsonTooDeepError);
    const error = fromBodyParser(thrown);
    expect(error?.details.issues).toEqual([{ loc: ['body'], msg: `JSON is nested deeper than ${MAX_JSON_DEPTH} levels`, type: 'json_too_deep' }]);
    expect(() => refuseDeepJson({} as never, {} as never, Buffer.from(nested(MAX_JSON_DEPTH)), 'utf-8')).not.toThrow();
  });

  it('reads other unicode encodings before counting', () => {
    const body = Buffer.from(nested(MAX_JSON_DEPTH + 1), 'utf16le');
    expect(() => refuseDeepJson({} as never, {} as never, body, 'utf-16le')).toThrow(JsonTooDeepError);
  });
});

describe('reserved key guard (__proto__, constructor)', () => {
  it('finds an own __proto__ key at any depth, as JSON.parse makes it', () => {
    expect(reservedKeyPath(JSON.parse('{"config":{"__proto__":{"polluted":true}}}'))).toEqual(['config', '__proto__']);
    expect(reservedKeyPath(JSON.parse('{"groups":[{"t":[1,{"__proto__":1}]}]}'))).toEqual(['groups', 0, 't', 1, '__proto__']);
    expect(reservedKeyPath(JSON.parse('{"a":{"constructor":{"prototype":1}}}'))).toEqual(['a', 'constructor']);
    expect(reservedKeyPath(JSON.parse('{"prototype":1,"proto":2,"Constructor":3}'))).toBeUndefined();
    expect(reservedKeyPath(undefined)).toBeUndefined();
  });

  it('refuses such a body with a 422 naming where the key is', () => {
    let passed: unknown = 'not called';
    refuseReservedKeys({ body: JSON.parse('{"a":{"__proto__":{}}}') } as never, {} as never, (err?: unknown) => (passed = err));
    expect(passed).toBeInstanceOf(ServiceError);
    expect((passed as ServiceError).details.issues).toEqual([{ loc: ['body', 'a', '__proto__'], msg: '"__proto__" is not allowed as a key', type: 'forbidden_key' }]);
    refuseReservedKeys({ body: { a: 1 } } as never, {} as never, (err?: unknown) => (passed = err));
    expect(passed).toBeUndefined();
  });
});
