import { DynamicModule, Module, Provider } from '@nestjs/common';
import { ArtifactCache } from './artifact-cache';
import { ARTIFACT_STORE, ArtifactStore } from './artifact-store';
import { ArtifactCacheSettings, ArtifactStoreSettings, createArtifactStore } from './artifact-store.config';

/**
 * The artifact store as a Nest provider (`@Inject(ARTIFACT_STORE)`), and with cache settings
 * the worker's `ArtifactCache` too. Global: one store per process.
 */
@Module({})
export class ArtifactsModule {
  static forRoot(settings: ArtifactStoreSettings & Partial<ArtifactCacheSettings>, store: ArtifactStore = createArtifactStore(settings)): DynamicModule {
    const providers: DynamicModule['providers'] = [{ provide: ARTIFACT_STORE, useValue: store }];
    if (settings.ARTIFACT_CACHE_MB !== undefined) {
      providers.push({ provide: ArtifactCache, useValue: new ArtifactCache(store, { dir: settings.ARTIFACT_CACHE_DIR, maxBytes: settings.ARTIFACT_CACHE_MB * 2 ** 20 }) });
    }
    return { module: ArtifactsModule, global: true, providers, exports: providers.map((p) => ('provide' in p ? p.provide : p)) };
  }
}

/** Whatever keeps the process's readiness (libs/runtime's ReadinessService). */
interface Readiness {
  register(name: string, probe: () => Promise<Record<string, unknown> | void>): void;
}

/**
 * Registers the artifact store as a hard dependency of the process (`artifact-store` in
 * /health/ready and the system check): `artifactStoreProbe(ReadinessService)` among an app's
 * providers. A HEAD of a key that is never stored answers "absent" when the store is reachable
 * and the credentials hold, and fails otherwise.
 */
export function artifactStoreProbe(readinessToken: unknown): Provider {
  return {
    provide: ARTIFACT_STORE_PROBE,
    inject: [readinessToken as never, ARTIFACT_STORE],
    useFactory: (readiness: Readiness, store: ArtifactStore) =>
      readiness.register('artifact-store', async () => {
        await store.has(NEVER_STORED);
        return { kind: store.kind };
      }),
  };
}

const ARTIFACT_STORE_PROBE = Symbol('ARTIFACT_STORE_PROBE');
/** The SHA-256 of no content anyone stores (all zero bits). */
const NEVER_STORED = '0'.repeat(64);
