import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { TimeoutError } from 'rxjs';
import { toServiceError } from './rpc-errors';

describe('toServiceError', () => {
  const subject = 'registry.model.create.v1';

  it('keeps a coded error from the other side', () => {
    const error = toServiceError({ code: 'conflict', message: 'name taken' }, subject, 100);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error.code).toBe(ErrorCode.Conflict);
    expect(error.message).toBe('name taken');
  });

  it('turns a timeout into `timeout` naming the service', () => {
    const error = toServiceError(new TimeoutError(), subject, 250);
    expect(error.code).toBe(ErrorCode.Timeout);
    expect(error.message).toBe('No reply from the registry service within 250 ms');
  });

  it.each([new Error('503 no responders'), new Error('Empty response. There are no subscribers listening to that message')])(
    'turns "%s" into `unavailable`',
    (err) => {
      const error = toServiceError(err, subject, 100);
      expect(error.code).toBe(ErrorCode.Unavailable);
      expect(error.details.retryAfterSeconds).toBe(1);
    },
  );

  it('turns a request too large for NATS into payload_too_large (413), not a 500', () => {
    const error = toServiceError(Object.assign(new Error('MAX_PAYLOAD_EXCEEDED'), { code: 'MAX_PAYLOAD_EXCEEDED' }), subject, 100);
    expect(error.code).toBe(ErrorCode.PayloadTooLarge);
    expect(error.message).toMatch(/too large to pass on to the registry service/);
  });

    it('treats anything else as internal', () => {
    expect(toServiceError({ status: 'error', message: 'Internal server error' }, subject, 100).code).toBe(ErrorCode.Internal);
  });
});
