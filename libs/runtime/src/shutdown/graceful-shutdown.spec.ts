import { ReadinessService } from '../health/readiness.service';
import { GracefulShutdown, onAbort } from './graceful-shutdown';

describe('GracefulShutdown', () => {
  const make = () => {
    const readiness = new ReadinessService();
    return { readiness, shutdown: new GracefulShutdown(readiness) };
  };

  it('is idle once every hold is released, each release counting once', async () => {
    const { shutdown } = make();
    const a = shutdown.hold();
    const b = shutdown.hold();
    let idle = false;
    const waiting = shutdown.idle(60_000).then((result) => (idle = result));
    a();
    a();
    await Promise.resolve();
    expect(shutdown.held).toBe(1);
    expect(idle).toBe(false);
    b();
    expect(await waiting).toBe(true);
  });

  it('says when the time ran out with work still held', async () => {
    const { shutdown } = make();
    shutdown.hold();
    expect(await shutdown.idle(20)).toBe(false);
    expect(shutdown.held).toBe(1);
  });

  it('holds tracked work until it settles, failed work included', async () => {
    const { shutdown } = make();
    let fail: (err: Error) => void = () => undefined;
    const work = shutdown.track(new Promise((_, reject) => (fail = reject)));
    work.catch(() => undefined);
    expect(shutdown.held).toBe(1);
    fail(new Error('x'));
    expect(await shutdown.idle(1_000)).toBe(true);
  });

  it('fails readiness from the moment shutdown begins, and tells listeners to stop', async () => {
    const { shutdown, readiness } = make();
    expect((await readiness.report()).ok).toBe(true);
    const stopped: string[] = [];
    onAbort(shutdown.stopping, () => stopped.push('early'));
    shutdown.begin();
    shutdown.begin();
    onAbort(shutdown.stopping, () => stopped.push('late'));
    expect(stopped).toEqual(['early', 'late']);
    const report = await readiness.report();
    expect(report.ok).toBe(false);
    expect(report.checks['shutdown']).toMatchObject({ ok: false, error: 'shutting down' });
    expect(shutdown.expired.aborted).toBe(false);
    shutdown.giveUp();
    expect(shutdown.expired.aborted).toBe(true);
  });
});
