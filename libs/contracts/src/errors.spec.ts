import { ErrorCode, isErrorCode, ServiceError } from './errors';

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

  it('knows exactly the declared codes', () => {
    expect(isErrorCode('timeout')).toBe(true);
    expect(isErrorCode('Timeout')).toBe(false);
    expect(isErrorCode(504)).toBe(false);
  });
});
