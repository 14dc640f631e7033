import { ValidationError, ValidationPipe } from '@nestjs/common';
import { ServiceError, ValidationIssue } from '@trainyard/contracts';

/**
 * One global pipe for every request DTO. Unknown fields are stripped rather than
 * rejected (OpenAI SDKs send extra_body keys); every problem is reported as a
 * FastAPI-style `detail` entry whose `loc` names the field.
 */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: false,
    transform: true,
    exceptionFactory: (errors) => ServiceError.validation(toIssues(errors, ['body'])),
  });
}

export function toIssues(errors: ValidationError[], parent: (string | number)[]): ValidationIssue[] {
  return errors.flatMap((error) => {
    const loc = [...parent, /^\d+$/.test(error.property) ? Number(error.property) : error.property];
    const own = Object.entries(error.constraints ?? {}).map(([type, msg]) => ({ loc, msg, type }));
    return [...own, ...toIssues(error.children ?? [], loc)];
  });
}
