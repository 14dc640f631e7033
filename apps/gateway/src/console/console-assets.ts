import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { existsSync, readFileSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import type { GatewayConfig } from '../config/gateway.config';

/** The built index.html says `<base href="/console/">`; served, it names the real mount point. */
const BUILT_BASE = '<base href="/console/">';

/**
 * The console is one page of our own scripts and Mantine's styles, talking only to this
 * origin: anything else (an injected script, a frame around it) is refused by the browser.
 * Mantine sets styles inline, hence 'unsafe-inline' for styles only.
 */
export const CONSOLE_PAGE_HEADERS: Record<string, string> = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export function consoleIndexHtml(built: string, mountPath: string): string {
  if (!built.includes(BUILT_BASE)) throw new Error(`the console's index.html has no ${BUILT_BASE}`);
  return built.replace(BUILT_BASE, `<base href="${mountPath}/">`);
}

/**
 * Serves the built console under `${API_PREFIX}/console`: hashed assets as files, every other
 * page path as index.html (the console routes in the browser); /console/api is left to the
 * controllers. Without a build, the API still runs and /console is a 404.
 */
export function serveConsole(app: NestExpressApplication, config: GatewayConfig): void {
  const logger = new Logger('Console');
  const mountPath = `${config.API_PREFIX}/console`;
  const dir = resolve(config.CONSOLE_DIR);
  const indexFile = join(dir, 'index.html');
  if (!existsSync(indexFile)) {
    logger.warn(`No console build at ${dir} (build it with: npx nx build console); ${mountPath}/ answers 404`);
    return;
  }
  const index = consoleIndexHtml(readFileSync(indexFile, 'utf8'), mountPath);

  app.use(mountPath, (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (req.path === '/api' || req.path.startsWith('/api/')) return next();
    const [pathname, query] = splitUrl(req.originalUrl);
    if (pathname === mountPath) return res.redirect(301, `${mountPath}/${query}`);
    if (extname(req.path) && req.path !== '/index.html') return next();
    res.set(CONSOLE_PAGE_HEADERS).type('html').send(index);
  });
  app.useStaticAssets(dir, {
    prefix: `${mountPath}/`,
    index: false,
    redirect: false,
    setHeaders: (res, path) => {
      res.setHeader('x-content-type-options', 'nosniff');
      // Vite names assets by their content hash: they never change under the same name.
      res.setHeader('cache-control', path.startsWith(join(dir, 'assets')) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  logger.log(`Console at ${mountPath}/`);
}

function splitUrl(url: string): [string, string] {
  const at = url.indexOf('?');
  return at < 0 ? [url, ''] : [url.slice(0, at), url.slice(at)];
}
