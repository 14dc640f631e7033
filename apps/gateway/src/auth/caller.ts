import { createParamDecorator, ExecutionContext } from '@nestjs/common';

/** Who is calling: resolved from the bearer key by the ApiKeyGuard. */
export interface Caller {
  entityId: string;
  entityName: string;
  apiKeyId: string;
}

export const CallerParam = createParamDecorator((_: unknown, ctx: ExecutionContext): Caller => {
  return ctx.switchToHttp().getRequest<{ caller: Caller }>().caller;
});
