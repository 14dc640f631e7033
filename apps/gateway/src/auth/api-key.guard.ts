import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IS_PUBLIC } from '@trainyard/runtime';
import type { Request } from 'express';
import { ApiKeysService } from './api-keys.service';
import type { Caller } from './caller';
import { CONSOLE_SESSION_ONLY } from './console-session-only.decorator';
import { CSRF_HEADER, sessionTokenOf } from './console-session.token';
import { ConsoleSessionsService } from './console-sessions.service';

/**
 * Global guard: every route needs a valid bearer key unless marked @Public(). A request with
 * no Authorization header but a console session cookie is the web console: it may use the
 * same API, and proves with the CSRF header that a state-changing request came from it.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
    private readonly sessions: ConsoleSessionsService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<Request & { caller?: Caller }>();
    const authorization = req.header('authorization');
    const sessionToken = sessionTokenOf(req);
    const sessionOnly = this.reflector.getAllAndOverride<boolean>(CONSOLE_SESSION_ONLY, targets);
    req.caller =
      sessionOnly || (authorization === undefined && sessionToken !== undefined)
        ? await this.sessions.authenticate(sessionToken, { method: req.method, csrfToken: req.header(CSRF_HEADER) })
        : await this.apiKeys.authenticate(authorization);
    return true;
  }
}
