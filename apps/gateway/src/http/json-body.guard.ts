import { CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ServiceError } from '@trainyard/contracts';
import type { Request } from 'express';

/**
 * A route whose body is JSON refuses a body of any other type by saying so. Without it, a
 * form-encoded body (curl -d without a Content-Type) or text/plain would reach validation as
 * an empty or foreign object and be refused for a missing `model`, which misleads.
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if (hasBody(req) && !req.is('application/json')) {
      const type = req.headers['content-type'];
      throw ServiceError.invalid(
        `The request body must be JSON sent with Content-Type: application/json; it came ${type ? `as ${type.slice(0, 100)}` : 'without a Content-Type'}`,
      );
    }
    return true;
  }
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Marks a route whose body must be JSON (see JsonBodyGuard). */
export const JsonBody = () => UseGuards(JsonBodyGuard);
