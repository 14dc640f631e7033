import { ErrorCode, isErrorCode, MAX_REPORTED_ISSUES, ServiceError } from './errors';

describe('ServiceError', () => {
  it('survives the wire: toWire then fromWire gives the same code, message and details', () => {
    const original = new ServiceError(ErrorCode.RateLimited, 'slow down', { retryAfterSeconds: 3 });
    const copy = ServiceError.fromWire(JSON.parse(JSON.stringify(original.toWire())));
    expect(copy).toBeInstanceOf(ServiceError);
    expect(copy?.code).toBe('rate_limited');
    expect(copy?.message).toBe('slow down');
    expect(copy?.details.retryAfterSeconds).toBe(3);
  });

  it.each([null, undefined, 'boom', { message: 'no code' }, { code: 'made_up', message: 'x' }, { code: 'not_found' }])(
    'does not mistake %p for a coded error',
    (value) => {
      expect(ServiceError.fromWire(value)).toBeUndefined();
    },
  );

  it('summarises every validation issue in the message and keeps them all', () => {
    const error = ServiceError.validation([
      { loc: ['body', 'model_id'], msg: 'must be a UUID', type: 'isUuid' },
      { loc: ['body', 'steps', 2], msg: 'must be an integer', type: 'isInt' },
    ]);
    expect(error.code).toBe(ErrorCode.ValidationFailed);
    expect(error.message).toBe('body.model_id: must be a UUID; body.steps.2: must be an integer');
    expect(error.details.issues).toHaveLength(2);
  });

  it('reports at most MAX_REPORTED_ISSUES issues, each of a bounded size, and counts the rest', () => {
    const issues = Array.from({ length: 10_000 }, (_, i) => ({ loc: ['body', 'items', i, 'k'.repeat(5_000)], msg: 'x'.repeat(100_000), type: 'dict_type' }));
    const error = ServiceError.validation(issues);
    expect(error.details.issues).toHaveLength(MAX_REPORTED_ISSUES);
    expect(error.message).toMatch(new RegExp(`; and ${10_000 - MAX_REPORTED_ISSUES} more problems$`));
    expect(JSON.stringify(error.toWire()).length).toBeLessThan(200_000);
    expect(error.details.issues?.[0].loc.slice(0, 3)).toEqual(['body', 'items', 0]);
  });

    it('knows exactly the declared codes', () => {
    expect(isErrorCode('timeout')).toBe(true);
    expect(isErrorCode('Timeout')).toBe(false);
    expect(isErrorCode(504)).toBe(false);
  });
});
