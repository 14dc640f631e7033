import {
  baseCookieOptions,
  cameOverHttps,
  csrfTokenFor,
  csrfTokenMatches,
  generateSessionToken,
  hashSessionToken,
  isSafeMethod,
  sessionCookieOptions,
} from './console-session.token';

describe('console session tokens', () => {
  it('are long and random, and stored only as their SHA-256', () => {
    const a = generateSessionToken();
    const b = generateSessionToken();
    expect(a.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.token).not.toBe(b.token);
    expect(a.hash).toBe(hashSessionToken(a.token));
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('have a CSRF token of their own that another session cannot use', () => {
    const a = generateSessionToken().token;
    const b = generateSessionToken().token;
    const csrf = csrfTokenFor(a);
    expect(csrf).not.toContain(a);
    expect(csrf).not.toBe(hashSessionToken(a));
    expect(csrfTokenMatches(a, csrf)).toBe(true);
    expect(csrfTokenMatches(b, csrf)).toBe(false);
  });

  it.each([[undefined], [''], ['x'], ['a'.repeat(43)]])('refuse the CSRF header %p', (given) => {
    expect(csrfTokenMatches(generateSessionToken().token, given)).toBe(false);
  });

  it('ask for CSRF only on methods that change something', () => {
    expect(['GET', 'head', 'OPTIONS'].map(isSafeMethod)).toEqual([true, true, true]);
    expect(['POST', 'DELETE', 'PUT', 'PATCH'].map(isSafeMethod)).toEqual([false, false, false, false]);
  });
});

describe('the console session cookie', () => {
  const expires = new Date('2030-01-01T00:00:00Z');

  it('is httpOnly, SameSite=Strict, scoped to the API prefix and expires with the session', () => {
    expect(sessionCookieOptions({ security: 'auto', prefix: '/api/training', https: false }, expires)).toEqual({
      httpOnly: true,
      sameSite: 'strict',
      secure: false,
      path: '/api/training/',
      expires,
    });
    expect(baseCookieOptions({ security: 'auto', prefix: '', https: false }).path).toBe('/');
  });

  it.each([
    ['auto', false, false],
    ['auto', true, true],
    ['always', false, true],
    ['never', true, false],
  ] as const)('with CONSOLE_COOKIE_SECURE=%s over https=%p is Secure=%p', (security, https, secure) => {
    expect(baseCookieOptions({ security, prefix: '', https }).secure).toBe(secure);
  });

  it('counts a request as https when the proxy says so', () => {
    expect(cameOverHttps(true, undefined)).toBe(true);
    expect(cameOverHttps(false, 'https')).toBe(true);
    expect(cameOverHttps(false, 'HTTPS, http')).toBe(true);
    expect(cameOverHttps(false, 'http')).toBe(false);
    expect(cameOverHttps(false, undefined)).toBe(false);
  });
});
