import { Body, Controller, Delete, Get, Header, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ConsoleSessionView, ServiceError } from '@trainyard/contracts';
import { Public } from '@trainyard/runtime';
import type { Request, Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { ConsoleSessionOnly } from '../auth/console-session-only.decorator';
import { baseCookieOptions, cameOverHttps, CookieContext, SESSION_COOKIE, sessionCookieOptions, sessionTokenOf } from '../auth/console-session.token';
import { ConsoleSessionsService } from '../auth/console-sessions.service';
import { GatewayConfig } from '../config/gateway.config';
import { toSessionView } from './console.views';
import { SignInRequest } from './dto/sign-in.request';

/** Sign-in, the current session, sign-out. The session token only ever travels in the cookie. */
@Controller('console/api/session')
export class ConsoleSessionController {
  constructor(
    private readonly sessions: ConsoleSessionsService,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  /**
   * JSON only: a cross-site HTML form cannot send a JSON body, so no other site can sign a
   * visitor in with a key of its choosing (login CSRF).
   */
  @Post()
  @Public()
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  async signIn(@Body() body: SignInRequest, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<ConsoleSessionView> {
    if (!req.is('application/json')) throw ServiceError.invalid('Sign in with a JSON body: {"key": "<API key>"}');
    const session = await this.sessions.signIn(body.key);
    res.cookie(SESSION_COOKIE, session.token, sessionCookieOptions(this.cookieContext(req), session.expiresAt));
    return toSessionView(session);
  }

  @Get()
  @ConsoleSessionOnly()
  @Header('cache-control', 'no-store')
  async current(@Req() req: Request): Promise<ConsoleSessionView> {
    return toSessionView(await this.sessions.describe(sessionTokenOf(req)));
  }

  @Delete()
  @ConsoleSessionOnly()
  async signOut(@CallerParam() caller: Caller, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<{ signed_out: true }> {
    await this.sessions.signOut(caller.sessionId as string);
    res.clearCookie(SESSION_COOKIE, baseCookieOptions(this.cookieContext(req)));
    return { signed_out: true };
  }

  private cookieContext(req: Request): CookieContext {
    return {
      security: this.config.CONSOLE_COOKIE_SECURE,
      prefix: this.config.API_PREFIX,
      https: cameOverHttps(req.secure, req.header('x-forwarded-proto')),
    };
  }
}
