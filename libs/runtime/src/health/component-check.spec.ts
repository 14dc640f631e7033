import { checkComponent } from './component-check';

describe('checkComponent', () => {
  it('reports ok with what the probe returns', async () => {
    const result = await checkComponent(async () => ({ pending: 3 }), 1_000);
    expect(result).toMatchObject({ ok: true, error: null, pending: 3 });
    expect(result.latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('reports the error message of a failing probe', async () => {
    const result = await checkComponent(async () => {
      throw new Error('connection refused');
    }, 1_000);
    expect(result).toMatchObject({ ok: false, error: 'connection refused' });
  });

  it('gives up on a probe that hangs, saying so', async () => {
    const result = await checkComponent(() => new Promise(() => undefined), 50);
    expect(result).toMatchObject({ ok: false, error: 'no answer within 50 ms' });
  });
});
