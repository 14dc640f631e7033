import { createParamDecorator, ExecutionContext } from '@nestjs/common';

/** Who is calling: resolved from the bearer key, or the console's session cookie, by the ApiKeyGuard. */
export interface Caller {
  entityId: string;
  entityName: string;
  /** The key used, or the one the console session signed in with. */
  apiKeyId: string;
  /** Set when the caller is the web console. */
  sessionId?: string;
}

export const CallerParam = createParamDecorator((_: unknown, ctx: ExecutionContext): Caller => {
  return ctx.switchToHttp().getRequest<{ caller: Caller }>().caller;
});
