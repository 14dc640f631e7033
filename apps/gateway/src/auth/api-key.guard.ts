import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IS_PUBLIC } from '@trainyard/runtime';
import type { Request } from 'express';
import { ApiKeysService } from './api-keys.service';
import type { Caller } from './caller';


/** Global guard: every route needs a valid bearer key unless marked @Public(). */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const req = context.switchToHttp().getRequest<Request & { caller?: Caller }>();
    req.caller = await this.apiKeys.authenticate(req.header('authorization'));
    return true;
  }
}
