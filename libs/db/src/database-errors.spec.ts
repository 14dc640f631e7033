import { ErrorCode } from '@trainyard/contracts';
import { databaseUnavailable } from './database-errors';

describe('databaseUnavailable', () => {
  // The shapes Prisma 7 with @prisma/adapter-pg threw against a PostgreSQL that was stopped with `pg_ctl -m immediate`.
  const unreachable = { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 5432 } } };

  it.each([
    ['a model query on a stopped server', Object.assign(new Error("Can't reach database server at 127.0.0.1:5432"), { code: 'P1001', meta: unreachable })],
    ['a raw query on a stopped server', Object.assign(new Error('Raw query failed. Code: `N/A`.'), { code: 'P2010', meta: unreachable })],
    ['a connection cut mid-query', new Error('Connection terminated unexpectedly')],
    ['a server still recovering', Object.assign(new Error('x'), { meta: { driverAdapterError: { cause: { kind: 'postgres', originalCode: '57P03' } } } })],
    ['a refused socket', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['an exhausted pool', Object.assign(new Error('Timed out fetching a new connection'), { code: 'P2024' })],
  ])('turns %s into a coded 503', (_, err) => {
    const error = databaseUnavailable(err);
    expect(error?.code).toBe(ErrorCode.Unavailable);
    expect(error?.details.retryAfterSeconds).toBe(1);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('Unique constraint failed'), { code: 'P2002' })],
    ['a plain bug', new TypeError('x is undefined')],
    ['nothing', undefined],
  ])('leaves %s alone', (_, err) => {
    expect(databaseUnavailable(err)).toBeUndefined();
  });
});
