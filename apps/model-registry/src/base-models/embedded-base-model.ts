import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { makeModel } from '@trainyard/engine/files';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { RegistryConfig } from '../config/registry.config';
import { BaseModelsService } from './base-models.service';

/**
 * Makes sure the embedded default base model exists, so a fresh deployment lists at least
 * one model it can serve and train. Written to a hidden directory first and renamed into
 * place, so replicas starting together and a crash mid-write both leave a whole model.
 */
@Injectable()
export class EmbeddedBaseModel implements OnModuleInit {
  private readonly logger = new Logger(EmbeddedBaseModel.name);

  constructor(
    @Inject(RegistryConfig) private readonly config: RegistryConfig,
    private readonly baseModels: BaseModelsService,
  ) {}

  async onModuleInit(): Promise<void> {
    const id = this.config.EMBEDDED_BASE_MODEL;
    const root = this.baseModels.root;
    // Without a models directory there is nowhere to write it (the catalogue's models only).
    if (!id || !root || (await this.baseModels.findOnDisk(id))) return;
    const target = join(root, id);
    const staging = join(root, `.embedded-${process.pid}-${Date.now()}`);
    try {
      makeModel({ preset: 'tiny', out: staging, seed: 0 });
      await mkdir(dirname(target), { recursive: true });
      await rename(staging, target).catch((err) => {
        if (!existsSync(join(target, 'config.json'))) throw err; // else another replica won the race
      });
      this.logger.log(`Embedded base model ${id} is at ${target}`);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
}
