import { RegistryConfig } from '../config/registry.config';
import { ArtifactSweeper } from './artifact-sweeper';

describe('ArtifactSweeper schedule', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** A sweeper on ARTIFACT_SWEEP_INTERVAL_S = intervalS; its sweeps themselves are what the tests give (the store and rows are not reached). */
  function sweeperEvery(intervalS: number): ArtifactSweeper {
    const unused = {} as never;
    return new ArtifactSweeper(unused, unused, unused, unused, unused, Object.assign(new RegistryConfig(), { ARTIFACT_SWEEP_INTERVAL_S: intervalS }));
  }

  /** Sweeps that run until `finish()` ends every one under way. */
  function heldSweeps(sweeper: ArtifactSweeper) {
    const pending: (() => void)[] = [];
    const sweep = jest.spyOn(sweeper, 'sweep').mockImplementation(() => new Promise<number>((resolve) => pending.push(() => resolve(0))));
    const finish = async () => {
      pending.splice(0).forEach((done) => done());
      await jest.advanceTimersByTimeAsync(0);
    };
    return { sweep, finish };
  }

  it('sweeps at start and then every interval, never two at once, and none after shutdown', async () => {
    const sweeper = sweeperEvery(60);
    const { sweep, finish } = heldSweeps(sweeper);
    sweeper.onApplicationBootstrap();
    expect(sweep).toHaveBeenCalledTimes(1);
    // The first is still running when the interval comes: that turn is skipped.
    await jest.advanceTimersByTimeAsync(60_000);
    expect(sweep).toHaveBeenCalledTimes(1);
    await finish();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(sweep).toHaveBeenCalledTimes(2);
    await finish();
    sweeper.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(600_000);
    expect(sweep).toHaveBeenCalledTimes(2);
  });

  it('sweeps at start only with an interval of 0', async () => {
    const sweeper = sweeperEvery(0);
    const { sweep, finish } = heldSweeps(sweeper);
    sweeper.onApplicationBootstrap();
    await finish();
    await jest.advanceTimersByTimeAsync(24 * 3600_000);
    expect(sweep).toHaveBeenCalledTimes(1);
  });

  it('tries again at the next turn after a failed sweep', async () => {
    const sweeper = sweeperEvery(10);
    const sweep = jest.spyOn(sweeper, 'sweep').mockRejectedValue(new Error('store unreachable'));
    sweeper.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(sweep).toHaveBeenCalledTimes(2);
    sweeper.onApplicationShutdown();
  });
});
