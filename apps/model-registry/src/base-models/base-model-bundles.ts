import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ARTIFACT_STORE, ArtifactStore, putBundleFromDir, readBundleManifest } from '@trainyard/artifacts';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { RegistryConfig } from '../config/registry.config';
import { BaseModelsService, InstalledBaseModel } from './base-models.service';

/** How long a resolve waits for a base model being published before answering without it. */
const PUBLISH_WAIT_MS = 2_000;

/**
 * With PUBLISH_BASE_MODELS, the base models under MODELS_DIR are also stored in the artifact
 * store (each a bundle of its top-level files), so that workers with BASE_MODEL_SOURCE=store
 * load them by digest into their own cache instead of mounting the models volume. A model is
 * published at start and whenever its files change (their names, sizes and times are its
 * signature); a resolve names the bundle once it is stored.
 */
@Injectable()
export class BaseModelBundles implements OnApplicationBootstrap {
  private readonly logger = new Logger(BaseModelBundles.name);
  /** By directory: the files' signature and the bundle being (or already) stored for them. */
  private readonly published = new Map<string, { signature: string; bundle: Promise<string | null> }>();

  constructor(
    @Inject(RegistryConfig) private readonly config: RegistryConfig,
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    private readonly baseModels: BaseModelsService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.PUBLISH_BASE_MODELS) return;
    void this.baseModels
      .list()
      .then((models) => Promise.all(models.filter((m) => !m.unsupported).map((m) => this.bundleOf(m))))
      .catch((err: Error) => this.logger.warn(`Could not publish the base models: ${err.message}`));
  }

  /** The model's bundle digest, or null when publishing is off, fails, or is still going on. */
  async bundleOf(base: InstalledBaseModel): Promise<string | null> {
    if (!this.config.PUBLISH_BASE_MODELS) return null;
    const { bundle } = await this.entryFor(base);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), PUBLISH_WAIT_MS)));
    try {
      return await Promise.race([bundle, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Every object of the installed base models' bundles, each published first (however long it
   * takes): the artifact sweep keeps them, as no row names them.
   */
  async objects(): Promise<Set<string>> {
    const objects = new Set<string>();
    if (!this.config.PUBLISH_BASE_MODELS) return objects;
    for (const base of await this.baseModels.list()) {
      if (base.unsupported) continue;
      const bundle = await (await this.entryFor(base)).bundle;
      if (!bundle) continue;
      objects.add(bundle);
      for (const file of (await readBundleManifest(this.store, bundle)).files) objects.add(file.sha256);
    }
    return objects;
  }

  /** The bundle being (or already) stored for the model's files as they are now. */
  private async entryFor(base: InstalledBaseModel): Promise<{ bundle: Promise<string | null> }> {
    const signature = await signatureOf(base.dir);
    let entry = this.published.get(base.dir);
    if (!entry || entry.signature !== signature) {
      entry = { signature, bundle: this.publish(base) };
      this.published.set(base.dir, entry);
    }
    return entry;
  }

  private async publish(base: InstalledBaseModel): Promise<string | null> {
    try {
      const { sha256, files } = await putBundleFromDir(this.store, base.dir, { skipDirectories: true });
      this.logger.log(`Base model ${base.id} is in the artifact store as ${sha256} (${files.length} files)`);
      return sha256;
    } catch (err) {
      this.logger.warn(`Could not publish base model ${base.id}: ${(err as Error).message}`);
      this.published.delete(base.dir);
      return null;
    }
  }
}

async function signatureOf(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile()).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const info = await stat(join(dir, entry.name));
    parts.push(`${entry.name}:${info.size}:${Math.floor(info.mtimeMs)}`);
  }
  return parts.join('/');
}
