import { CONSOLE_PAGE_HEADERS, consoleIndexHtml } from './console-assets';

describe('the console page', () => {
  const built = '<!doctype html><html><head><base href="/console/"><script type="module" src="./assets/index-abc.js"></script></head></html>';

  it('names its real mount point, so relative asset paths work behind an API prefix', () => {
    expect(consoleIndexHtml(built, '/console')).toContain('<base href="/console/">');
    const prefixed = consoleIndexHtml(built, '/api/training/console');
    expect(prefixed).toContain('<base href="/api/training/console/">');
    expect(prefixed).not.toContain('<base href="/console/">');
  });

  it('refuses a build without the base element it relies on', () => {
    expect(() => consoleIndexHtml('<html></html>', '/console')).toThrow(/base href/);
  });

  it('runs only its own scripts and cannot be framed', () => {
    const csp = CONSOLE_PAGE_HEADERS['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("connect-src 'self'");
  });
});
