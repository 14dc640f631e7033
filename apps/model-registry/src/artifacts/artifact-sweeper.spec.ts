import type { ArtifactStore } from '@trainyard/artifacts';
import type { PrismaService } from '@trainyard/db';
import type { RpcClient } from '@trainyard/messaging';
import type { BaseModelBundles } from '../base-models/base-model-bundles';
import { RegistryConfig } from '../config/registry.config';
import { ArtifactSweeper } from './artifact-sweeper';
import type { LegacyArtifactDirs } from './legacy-artifact-dirs';

describe('ArtifactSweeper schedule', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** A sweeper whose sweeps are counted and finish when `finish` is called. */
  function sweeper(intervalS: number) {
    const config = Object.assign(new RegistryConfig(), { ARTIFACT_SWEEP_INTERVAL_S: intervalS });
    const none = {} as never;
    const s = new ArtifactSweeper(none as ArtifactStore, none as LegacyArtifactDirs, none as PrismaService, none as BaseModelBundles, none as RpcClient, config);
    const pending: (() => void)[] = [];
    const sweep = jest.spyOn(s, 'sweep').mockImplementation(() => new Promise<number>((resolve) => pending.push(() => resolve(0))));
    const finish = async () => {
      pending.splice(0).forEach((done) => done());
      await jest.advanceTimersByTimeAsync(0);
    };
    return { s, sweep, finish };
  }

  it('sweeps at start and then every interval, never two at once', async () => {
    const { s, sweep, finish } = sweeper(60);
    s.onApplicationBootstrap();
    expect(sweep).toHaveBeenCalledTimes(1);
    // The first is still running when the interval comes: that turn is skipped.
    await jest.advanceTimersByTimeAsync(60_000);
    expect(sweep).toHaveBeenCalledTimes(1);
    await finish();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(sweep).toHaveBeenCalledTimes(2);
    await finish();
    s.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(600_000);
    expect(sweep).toHaveBeenCalledTimes(2);
  });

  it('sweeps at start only with an interval of 0, and a failed sweep leaves the next turn to try', async () => {
    const once = sweeper(0);
    once.s.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(24 * 3600_000);
    expect(once.sweep).toHaveBeenCalledTimes(1);
    await once.finish();

    const config = Object.assign(new RegistryConfig(), { ARTIFACT_SWEEP_INTERVAL_S: 10 });
    const none = {} as never;
    const failing = new ArtifactSweeper(none, none, none, none, none, config);
    const sweep = jest.spyOn(failing, 'sweep').mockRejectedValue(new Error('store unreachable'));
    failing.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(sweep).toHaveBeenCalledTimes(2);
    failing.onApplicationShutdown();
  });
});
