import { Inject, Injectable, Logger } from '@nestjs/common';
import type { BaseModelInfo } from '@trainyard/contracts';
import { ModelLoadError, parseModelConfig } from '@trainyard/engine/files';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { RegistryConfig } from '../config/registry.config';

/** A base model with where it lives on disk. */
export interface InstalledBaseModel extends BaseModelInfo {
  dir: string;
}

/**
 * The base models of this deployment are the Hugging Face model directories found under
 * MODELS_DIR, at depth one (`name/`) or two (`org/name/`), each with its config.json.
 * Read on every call: dropping a model directory in makes it available without a restart.
 * One the engine cannot load (an architecture it does not implement) is listed all the same,
 * with the reason, so that a user sees why it cannot be served.
 */
@Injectable()
export class BaseModelsService {
  private readonly logger = new Logger(BaseModelsService.name);
  readonly root: string;

  constructor(@Inject(RegistryConfig) config: RegistryConfig) {
    this.root = resolve(config.MODELS_DIR);
  }

  async list(): Promise<InstalledBaseModel[]> {
    const found: InstalledBaseModel[] = [];
    for (const first of await subdirectories(this.root)) {
      const model = await this.read(first);
      if (model) {
        found.push(model);
        continue;
      }
      for (const second of await subdirectories(join(this.root, first))) {
        const nested = await this.read(`${first}/${second}`);
        if (nested) found.push(nested);
      }
    }
    return found.sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The installed base model with this id, if there is one. */
  async find(id: string): Promise<InstalledBaseModel | undefined> {
    if (!/^([A-Za-z0-9._-]+\/)?[A-Za-z0-9._-]+$/.test(id) || id.split('/').some((s) => s.startsWith('.'))) return undefined;
    return this.read(id);
  }

  private async read(id: string): Promise<InstalledBaseModel | undefined> {
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
      return { id, dir, created, architecture: typeof modelType === 'string' ? modelType : 'unknown', unsupported: unsupportedReason(config) };
    } catch (err) {
      this.logger.warn(`Skipping ${id}: its config.json is not valid JSON (${(err as Error).message})`);
      return undefined;
    }
  }
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
