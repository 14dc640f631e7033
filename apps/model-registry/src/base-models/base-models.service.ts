import { Inject, Injectable, Logger } from '@nestjs/common';
import type { BaseModelInfo } from '@trainyard/contracts';
import { ModelLoadError, parseModelConfig } from '@trainyard/engine/files';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { RegistryConfig } from '../config/registry.config';
import { PublishedBaseModelRepository, PublishedBaseModelRow } from './published-base-model.repository';

/** A base model with where it lives. */
export interface InstalledBaseModel extends BaseModelInfo {
  /**
   * Its directory under MODELS_DIR (on a replica that mounts the models volume). For a model
   * known only from the catalogue on a replica without MODELS_DIR, its id: there is nothing
   * to read there, its bundle is the way to its files.
   */
  dir: string;
  /**
   * For a model this replica knows only from the catalogue of published models (it is not on
   * its disk), the bundle to load it from; null for a model on disk.
   */
  publishedBundle: string | null;
}

/**
 * The base models of this deployment are the Hugging Face model directories found under
 * MODELS_DIR, at depth one (`name/`) or two (`org/name/`), each with its config.json, and the
 * models published to the artifact store (PUBLISH_BASE_MODELS) by a replica or job that holds
 * them on its volume, so that a replica without the volume serves them all the same.
 * Read on every call: dropping a model directory in makes it available without a restart.
 * One the engine cannot load (an architecture it does not implement) is listed all the same,
 * with the reason, so that a user sees why it cannot be served.
 */
@Injectable()
export class BaseModelsService {
  private readonly logger = new Logger(BaseModelsService.name);
  /** MODELS_DIR, resolved; null when empty (a replica without a models volume: the catalogue only). */
  readonly root: string | null;

  constructor(
    @Inject(RegistryConfig) config: RegistryConfig,
    private readonly published: PublishedBaseModelRepository,
  ) {
    this.root = config.MODELS_DIR ? resolve(config.MODELS_DIR) : null;
  }

  /** Whether MODELS_DIR is set and is a directory (a models volume mounted). */
  async hasModelsDir(): Promise<boolean> {
    return this.root !== null && (await stat(this.root).then((s) => s.isDirectory(), () => false));
  }

  async list(): Promise<InstalledBaseModel[]> {
    const onDisk = await this.listOnDisk();
    const ids = new Set(onDisk.map((m) => m.id));
    const publishedOnly = (await this.published.list()).filter((row) => !ids.has(row.id)).map((row) => this.fromCatalogue(row));
    return [...onDisk, ...publishedOnly].sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The models under MODELS_DIR only. */
  async listOnDisk(): Promise<InstalledBaseModel[]> {
    const root = this.root;
    const found: InstalledBaseModel[] = [];
    if (!root) return found;
    for (const first of await subdirectories(root)) {
      const model = await this.read(first);
      if (model) {
        found.push(model);
        continue;
      }
      for (const second of await subdirectories(join(root, first))) {
        const nested = await this.read(`${first}/${second}`);
        if (nested) found.push(nested);
      }
    }
    return found.sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The installed base model with this id, if there is one. */
  async find(id: string): Promise<InstalledBaseModel | undefined> {
    if (!isModelId(id)) return undefined;
    const onDisk = await this.findOnDisk(id);
    if (onDisk) return onDisk;
    const row = await this.published.find(id);
    return row ? this.fromCatalogue(row) : undefined;
  }

  /** The model with this id under MODELS_DIR, if it is there. */
  async findOnDisk(id: string): Promise<InstalledBaseModel | undefined> {
    return isModelId(id) ? this.read(id) : undefined;
  }

  /** Only supported models are published, so one from the catalogue is servable. */
  private fromCatalogue(row: PublishedBaseModelRow): InstalledBaseModel {
    const created = Math.floor(row.createdAt.getTime() / 1000);
    return { id: row.id, dir: this.root ? join(this.root, row.id) : row.id, created, architecture: row.architecture, unsupported: null, publishedBundle: row.bundle };
  }

  private async read(id: string): Promise<InstalledBaseModel | undefined> {
    if (!this.root) return undefined;
    const dir = join(this.root, id);
    let text: string;
    let created: number;
    try {
      text = await readFile(join(dir, 'config.json'), 'utf8');
      created = Math.floor((await stat(join(dir, 'config.json'))).mtimeMs / 1000);
    } catch {
      return undefined;
    }
    try {
      const config = JSON.parse(text) as unknown;
      const modelType = (config as { model_type?: unknown } | null)?.model_type;
      return { id, dir, created, architecture: typeof modelType === 'string' ? modelType : 'unknown', unsupported: unsupportedReason(config), publishedBundle: null };
    } catch (err) {
      this.logger.warn(`Skipping ${id}: its config.json is not valid JSON (${(err as Error).message})`);
      return undefined;
    }
  }
}

/** `<name>` or `<org>/<name>`, of safe characters, no part hidden: anything else names no base model (and never reaches a path or a query). */
function isModelId(id: string): boolean {
  return /^([A-Za-z0-9._-]+\/)?[A-Za-z0-9._-]+$/.test(id) && !id.split('/').some((part) => part.startsWith('.'));
}

/** Why the engine cannot load a model of this config.json, or null when it can. */
function unsupportedReason(config: unknown): string | null {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return 'config.json is not a JSON object';
  try {
    parseModelConfig(config as Record<string, unknown>);
    return null;
  } catch (err) {
    if (err instanceof ModelLoadError) return err.reason;
    throw err;
  }
}

async function subdirectories(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name);
  } catch {
    return [];
  }
}
