import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { ServiceError, ValidationIssue } from '@trainyard/contracts';

/**
 * One global pipe for every request DTO. Unknown fields are stripped rather than
 * rejected (OpenAI SDKs send extra_body keys); every problem is reported as a
 * FastAPI-style `detail` entry whose `loc` names where it is: body, query or path.
 */
class LocatedValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    try {
      return await super.transform(value, metadata);
    } catch (err) {
      // The exception factory cannot see where the value came from; this can.
      if (!(err instanceof ServiceError) || !err.details.issues) throw err;
      const place = metadata.type === 'param' ? 'path' : metadata.type === 'custom' ? 'body' : metadata.type;
      throw ServiceError.validation(err.details.issues.map((issue) => ({ ...issue, loc: [place, ...issue.loc.slice(1)] })));
    }
  }
}

export function createValidationPipe(): ValidationPipe {
  return new LocatedValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: false,
    transform: true,
    exceptionFactory: (errors) => ServiceError.validation(toIssues(errors, ['body'])),
  });
}

/**
 * One issue per field that fails: the first of its decorators (as written, top down) that
 * fails, which is what the field is ("must be a number") before its bounds ("must not be
 * greater than 2"), so that a string sent for a number is one problem, not three.
 */
export function toIssues(errors: ValidationError[], parent: (string | number)[]): ValidationIssue[] {
  return errors.flatMap((error) => {
    const loc = [...parent, /^\d+$/.test(error.property) ? Number(error.property) : error.property];
    const own = firstWritten(error.constraints ?? {});
    return [...(own ? [{ loc, msg: own[1], type: own[0] }] : []), ...toIssues(error.children ?? [], loc)];
  });
}

/**
 * class-validator lists a field's failed constraints in the order its decorators apply, bottom
 * up, with nested validation (whose children are reported on their own) last.
 */
function firstWritten(constraints: Record<string, string>): [string, string] | undefined {
  const entries = Object.entries(constraints);
  const own = entries.filter(([type]) => type !== 'nestedValidation');
  return (own.length ? own : entries).at(-1);
}
