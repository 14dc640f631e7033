import { ArgumentsHost, NotFoundException } from '@nestjs/common';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { fromBodyParser } from './body-parser-errors';
import { HttpErrorFilter } from './http-error.filter';

function run(exception: unknown, path: string) {
  const res = {
    statusCode: 0,
    headers: {} as Record<string, string>,
    body: undefined as unknown,
    headersSent: false,
    setHeader(name: string, value: string) {
      this.headers[name.toLowerCase()] = value;
    },
    status(code: number) {
      this.statusCode = code;
      return this;
    },
    json(body: unknown) {
      this.body = body;
    },
  };
  const req = { method: 'POST', path, originalUrl: path };
  const host = { switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }) } as unknown as ArgumentsHost;
  new HttpErrorFilter().catch(exception, host);
  return res;
}

describe('HttpErrorFilter', () => {
  it.each([
    [ErrorCode.InvalidRequest, 400],
    [ErrorCode.Unauthorized, 401],
    [ErrorCode.Forbidden, 403],
    [ErrorCode.NotFound, 404],
    [ErrorCode.Conflict, 409],
    [ErrorCode.PayloadTooLarge, 413],
    [ErrorCode.ValidationFailed, 422],
    [ErrorCode.RateLimited, 429],
    [ErrorCode.Unavailable, 503],
    [ErrorCode.Timeout, 504],
  ])('answers %s with HTTP %i', (code, status) => {
    expect(run(new ServiceError(code, 'x'), '/v1/preview/models').statusCode).toBe(status);
  });

  it('answers preview routes with {detail: message}', () => {
    const res = run(ServiceError.conflict('Model "a" already exists'), '/v1/preview/models');
    expect(res.body).toEqual({ detail: 'Model "a" already exists' });
  });

  it('says x-should-retry: true only where the same request can succeed later', () => {
    const retry = (error: ServiceError) => run(error, '/v1/chat/completions').headers['x-should-retry'];
    expect(retry(ServiceError.conflict('Model "a" already exists'))).toBe('false');
    expect(retry(new ServiceError(ErrorCode.Conflict, 'still being processed', { retryAfterSeconds: 1 }))).toBe('true');
    expect(retry(new ServiceError(ErrorCode.Internal, 'Internal server error'))).toBe('false');
    expect(retry(ServiceError.invalid('bad', 'top_p'))).toBe('false');
    for (const code of [ErrorCode.RateLimited, ErrorCode.Unavailable, ErrorCode.Timeout]) expect(retry(new ServiceError(code, 'x'))).toBe('true');
  });

  it('answers an invalid body on OpenAI routes with 400, one sentence per problem, naming the first field', () => {
    const error = ServiceError.validation([
      { loc: ['body', 'temperature'], msg: 'temperature must be a number', type: 'isNumber' },
      { loc: ['body', 'messages', 0, 'role'], msg: 'role must be one of ...', type: 'isIn' },
    ]);
    for (const path of ['/v1/chat/completions', '/api/training/v1/responses', '/v1/files']) {
      const res = run(error, path);
      expect(res.statusCode).toBe(400);
      expect(res.body).toEqual({
        error: {
          message: 'temperature: temperature must be a number; messages[0].role: role must be one of ...',
          type: 'invalid_request_error',
          param: 'temperature',
          code: 'validation_failed',
        },
      });
    }
    const many = ServiceError.validation(Array.from({ length: 52 }, (_, i) => ({ loc: ['body', 'stop', i], msg: 'must be a string', type: 'isString' })));
    expect((run(many, '/v1/chat/completions').body as { error: { message: string } }).error.message).toMatch(/^stop\[0\]: must be a string; .*; and 2 more problems$/);
    // OpenAI writes array indexes in brackets: tools[1].function.name, never tools.1.function.name.
    const tool = ServiceError.validation([{ loc: ['body', 'tools', 1, 'function', 'name'], msg: 'bad name', type: 'matches' }]);
    expect((run(tool, '/v1/chat/completions').body as { error: { param: string } }).error.param).toBe('tools[1].function.name');
    const malformed = run(fromBodyParser({ type: 'entity.parse.failed', message: 'Unexpected token' }), '/v1/chat/completions');
    expect(malformed.statusCode).toBe(400);
    expect((malformed.body as { error: { param: unknown; message: string } }).error).toMatchObject({ param: null, message: 'Malformed JSON: Unexpected token' });
  });

  it('answers validation errors with the FastAPI detail list', () => {
    const issues = [{ loc: ['body', 'model_id'], msg: 'must be a UUID', type: 'isUuid' }];
    const res = run(ServiceError.validation(issues), '/api/training/v1/preview/training-jobs');
    expect(res.statusCode).toBe(422);
    expect(res.body).toEqual({ detail: issues });
    expect(res.headers['x-should-retry']).toBe('false');
  });

  it('answers OpenAI routes in the OpenAI envelope', () => {
    const res = run(new ServiceError(ErrorCode.ModelNotFound, 'The model `x` does not exist'), '/v1/chat/completions');
    expect(res.statusCode).toBe(404);
    expect(res.body).toEqual({
      error: { message: 'The model `x` does not exist', type: 'not_found_error', param: null, code: 'model_not_found' },
    });
  });

  it("uses OpenAI's own code names where it has them", () => {
    const res = run(new ServiceError(ErrorCode.Unauthorized, 'Unknown API key'), '/v1/models');
    expect((res.body as { error: { code: string; type: string } }).error).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
  });

  it('names the field of the first validation issue as OpenAI param', () => {
    const error = ServiceError.validation([{ loc: ['body', 'temperature'], msg: 'must not be greater than 2', type: 'max' }]);
    const res = run(error, '/v1/chat/completions');
    expect((res.body as { error: { param: string } }).error.param).toBe('temperature');
  });

  it('sets Retry-After when the error says how long to wait', () => {
    const res = run(new ServiceError(ErrorCode.RateLimited, 'too many', { retryAfterSeconds: 2 }), '/v1/chat/completions');
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('2');
  });

  it('turns body-parser errors into 413 and 422', () => {
    const tooLarge = fromBodyParser({ type: 'entity.too.large', limit: 1024 });
    expect(run(tooLarge, '/v1/preview/models').statusCode).toBe(413);
    const malformed = run(fromBodyParser({ type: 'entity.parse.failed', message: 'Unexpected token' }), '/v1/preview/models');
    expect(malformed.statusCode).toBe(422);
    expect(malformed.body).toEqual({ detail: [{ loc: ['body'], msg: 'Malformed JSON: Unexpected token', type: 'json_invalid' }] });
    expect(fromBodyParser(new Error('not from the parser'))).toBeUndefined();
  });

  it('answers an unknown route under /v1 in the OpenAI envelope, under /v1/preview in {detail}', () => {
    for (const path of ['/v1/nope', '/v1/completions', '/api/training/v1/embeddings']) {
      const res = run(new NotFoundException(), path);
      expect(res.statusCode).toBe(404);
      expect(res.body).toEqual({ error: { message: `No route for POST ${path}`, type: 'not_found_error', param: null, code: 'not_found' } });
    }
    expect(run(new NotFoundException(), '/v1/preview/nope').body).toEqual({ detail: 'No route for POST /v1/preview/nope' });
    expect(run(new NotFoundException(), '/console/api/nope').body).toEqual({ detail: 'No route for POST /console/api/nope' });
  });

  it('answers a client error raised by Express middleware (http-errors, 4xx, exposed) with its own message', () => {
    const error = Object.assign(new Error('request aborted'), { status: 400, expose: true, type: 'request.aborted' });
    const res = run(error, '/v1/preview/models');
    expect(res.statusCode).toBe(400);
    expect(res.body).toEqual({ detail: 'request aborted' });
    const unsupported = Object.assign(new Error('unsupported content encoding "br"'), { status: 415, expose: true });
    expect(run(unsupported, '/v1/chat/completions').statusCode).toBe(400);
  });

  it('keeps unexposed and server-side errors a 500', () => {
    expect(run(Object.assign(new Error('db password wrong'), { status: 400, expose: false }), '/v1/preview/models').statusCode).toBe(500);
    expect(run(Object.assign(new Error('boom'), { status: 503, expose: true }), '/v1/preview/models').statusCode).toBe(500);
  });

    it('never leaks the message of an unexpected error', () => {
    const res = run(new TypeError('secret internals'), '/v1/preview/models');
    expect(res.statusCode).toBe(500);
    expect(res.body).toEqual({ detail: 'Internal server error' });
  });
});
