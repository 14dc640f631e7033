import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ARTIFACT_STORE, ArtifactNotFoundError, ArtifactStore, putBundleFromDir } from '@trainyard/artifacts';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { RegistryConfig } from '../config/registry.config';
import { BaseModelsService, InstalledBaseModel } from './base-models.service';
import { PublishedBaseModelRepository } from './published-base-model.repository';

/** How long a resolve waits for a base model being published before answering without it. */
const PUBLISH_WAIT_MS = 2_000;

/**
 * With PUBLISH_BASE_MODELS, the base models under MODELS_DIR are also stored in the artifact
 * store (each a bundle of its top-level files) and recorded in the catalogue of published
 * models, so that workers with BASE_MODEL_SOURCE=store load them by digest into their own
 * cache, and registry replicas without the models volume list and resolve them. A model is
 * published at start and whenever its files change (their names, sizes and times are its
 * signature: files the catalogue already holds under the same signature are not hashed
 * again); a resolve names the bundle once it is stored. A model gone from the volume leaves
 * the catalogue at the next full publish (start, or `main.js publish-base-models`).
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
    private readonly catalogue: PublishedBaseModelRepository,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.PUBLISH_BASE_MODELS) return;
    this.publishAll().catch((err: Error) => this.logger.warn(`Could not publish the base models: ${err.message}`));
  }

  /**
   * Publishes every supported model on disk (however long it takes) and removes from the
   * catalogue those no longer there. Returns the ids published and removed. Without a models
   * directory it publishes nothing and removes nothing: a volume that failed to mount must not
   * empty the catalogue.
   */
  async publishAll(): Promise<{ published: string[]; removed: string[] }> {
    if (!(await this.baseModels.hasModelsDir())) {
      throw new Error(`MODELS_DIR (${this.baseModels.root ?? 'empty'}) is not a directory: nothing to publish, the catalogue is left as it is`);
    }
    const models = (await this.baseModels.listOnDisk()).filter((m) => !m.unsupported);
    const published: string[] = [];
    for (const model of models) if (await (await this.entryFor(model)).bundle) published.push(model.id);
    const removed = await this.catalogue.deleteExcept(models.map((m) => m.id));
    for (const id of removed) this.logger.log(`Base model ${id} left the catalogue: it is no longer under MODELS_DIR`);
    return { published, removed };
  }

  /** The model's bundle digest, or null when publishing is off, fails, or is still going on. */
  async bundleOf(base: InstalledBaseModel): Promise<string | null> {
    if (base.publishedBundle) return base.publishedBundle;
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

  /** Resolves once the publishes this process has under way are done (the artifact sweep waits: their objects have no row yet). */
  async settled(): Promise<void> {
    await Promise.all([...this.published.values()].map((entry) => entry.bundle));
  }

  /** The bundle being (or already) stored for the model's files as they are now. */
  private async entryFor(base: InstalledBaseModel): Promise<{ bundle: Promise<string | null> }> {
    const signature = await signatureOf(base.dir);
    let entry = this.published.get(base.dir);
    if (!entry || entry.signature !== signature) {
      entry = { signature, bundle: this.publish(base, signature) };
      this.published.set(base.dir, entry);
    }
    return entry;
  }

  private async publish(base: InstalledBaseModel, signature: string): Promise<string | null> {
    try {
      const known = await this.catalogue.find(base.id);
      if (known && known.signature === signature && (await this.store.has(known.bundle))) return known.bundle;
      const { sha256, files } = await putBundleFromDir(this.store, base.dir, { skipDirectories: true });
      await this.catalogue.save(
        { id: base.id, architecture: base.architecture, bundle: sha256, signature, createdAt: new Date(base.created * 1000) },
        async () => {
          if (!(await this.store.has(sha256))) throw new ArtifactNotFoundError(sha256);
        },
      );
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
