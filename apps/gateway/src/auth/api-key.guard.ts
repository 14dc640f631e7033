import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IS_PUBLIC } from '@trainyard/runtime';
import type { Request } from 'express';
import { isTinkerRoute } from '../http/route-family';
import { ApiKeysService } from './api-keys.service';
import type { Caller } from './caller';
import { CONSOLE_SESSION_ONLY } from './console-session-only.decorator';
import { CSRF_HEADER, sessionTokenOf } from './console-session.token';
import { ConsoleSessionsService } from './console-sessions.service';

/** What the Tinker SDK puts before a key; `tml-<key>` is the same key as `<key>`. */
export const TINKER_KEY_PREFIX = 'tml-';

/**
 * Global guard: every route needs a valid bearer key unless marked @Public(). A request with
 * no Authorization header but a console session cookie is the web console: it may use the
 * same API, and proves with the CSRF header that a state-changing request came from it.
 * The Tinker routes (`/api/v1/...`) also take the key as the Tinker SDK sends it: `X-API-Key`.
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
    // The Tinker SDK sends its key as X-API-Key, prefixed `tml-` (it refuses keys without).
    const tinkerKey = isTinkerRoute(req.path) ? req.header('x-api-key') : undefined;
    if (tinkerKey !== undefined && req.header('authorization') === undefined) {
      req.caller = await this.apiKeys.verify(tinkerKey.startsWith(TINKER_KEY_PREFIX) ? tinkerKey.slice(TINKER_KEY_PREFIX.length) : tinkerKey);
      return true;
    }
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
