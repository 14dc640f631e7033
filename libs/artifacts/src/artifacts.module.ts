import { DynamicModule, Module } from '@nestjs/common';
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
