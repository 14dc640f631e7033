import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CookieOptions } from 'express';
import type { CookieSecurity } from '../config/gateway.config';

/** The console's session cookie: httpOnly, so page scripts never see the token. */
export const SESSION_COOKIE = 'trainyard_console';
/** Every state-changing console request carries the CSRF token in this header. */
export const CSRF_HEADER = 'x-csrf-token';

const CSRF_CONTEXT = 'trainyard console csrf v1';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface NewSessionToken {
  token: string;
  /** What the database keeps: a leaked table holds no usable session. */
  hash: string;
}

/** 256 random bits, like API keys: a fast hash is the right one to store. */
export function generateSessionToken(): NewSessionToken {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashSessionToken(token) };
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * The CSRF token of a session, derived from its secret token, so nothing more is stored. A
 * cross-site page can make the browser send the cookie (SameSite aside) but can read neither
 * the cookie nor this value, so it cannot forge the header.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update(CSRF_CONTEXT).digest('base64url');
}

export function csrfTokenMatches(sessionToken: string, given: string | undefined): boolean {
  if (!given) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Methods that change nothing need no CSRF token (EventSource, for one, cannot send headers). */
export function isSafeMethod(method: string): boolean {
  return SAFE_METHODS.has(method.toUpperCase());
}

export interface CookieContext {
  security: CookieSecurity;
  /** The API prefix: the cookie goes only to this service's own paths. */
  prefix: string;
  /** req.secure, or what a proxy says in X-Forwarded-Proto. */
  https: boolean;
}

export function sessionCookieOptions(context: CookieContext, expiresAt: Date): CookieOptions {
  return { ...baseCookieOptions(context), expires: expiresAt };
}

/** What clearCookie needs: the same name, path and flags the cookie was set with. */
export function baseCookieOptions({ security, prefix, https }: CookieContext): CookieOptions {
  const secure = security === 'always' || (security === 'auto' && https);
  return { httpOnly: true, sameSite: 'strict', secure, path: `${prefix}/` };
}

/** Whether a request came over https: directly, or through a proxy saying so. */
export function cameOverHttps(secure: boolean, forwardedProto: string | undefined): boolean {
  return secure || (forwardedProto ?? '').split(',')[0].trim().toLowerCase() === 'https';
}

/** The session token of a request, from the cookie cookie-parser read. */
export function sessionTokenOf(req: { cookies?: Record<string, unknown> }): string | undefined {
  const value = req.cookies?.[SESSION_COOKIE];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}
