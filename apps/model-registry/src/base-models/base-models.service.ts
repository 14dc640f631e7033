import { Inject, Injectable, Logger } from '@nestjs/common';
import type { BaseModelInfo } from '@trainyard/contracts';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { RegistryConfig } from '../config/registry.config';

/**
 * The base models of this deployment are the Hugging Face model directories found under
 * MODELS_DIR, at depth one (`name/`) or two (`org/name/`), each with its config.json.
 * Read on every call: dropping a model directory in makes it available without a restart.
 */
@Injectable()
export class BaseModelsService {
  private readonly logger = new Logger(BaseModelsService.name);
  private readonly root: string;

  constructor(@Inject(RegistryConfig) config: RegistryConfig) {
    this.root = resolve(config.MODELS_DIR);
  }

  async list(): Promise<BaseModelInfo[]> {
    const found: BaseModelInfo[] = [];
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

  private async read(id: string): Promise<BaseModelInfo | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.root, id, 'config.json'), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const config = JSON.parse(text) as { model_type?: unknown };
      return { id, architecture: typeof config.model_type === 'string' ? config.model_type : 'unknown' };
    } catch (err) {
      this.logger.warn(`Skipping ${id}: its config.json is not valid JSON (${(err as Error).message})`);
      return undefined;
    }
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
