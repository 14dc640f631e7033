import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DbModule } from '@trainyard/db';
import { DATABASE_URL_PATTERN, loadConfig, ProcessHealthModule, runMain } from '@trainyard/runtime';
import { Matches } from 'class-validator';
import { ApiKeysRepository } from '../auth/api-keys.repository';
import { ApiKeysService } from '../auth/api-keys.service';
import { KEYS_USAGE, parseKeysArgs } from './keys-args';

class KeysCliConfig {
  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;
}

runMain(async () => {
  const args = parseKeysArgs(process.argv.slice(2));
  if (args.command === 'help') {
    console.log(KEYS_USAGE);
    return;
  }
  if (args.command === 'invalid') {
    console.error(`${args.message}\n\n${KEYS_USAGE}`);
    process.exit(2);
  }
  const config = loadConfig(KeysCliConfig);

  @Module({
    imports: [ProcessHealthModule, DbModule.forRoot(config.DATABASE_URL)],
    providers: [ApiKeysRepository, ApiKeysService],
  })
  class KeysCliModule {}

  const app = await NestFactory.createApplicationContext(KeysCliModule, { logger: ['error'] });
  try {
    const keys = app.get(ApiKeysService);
    if (args.command === 'create') {
      const { key, secret } = await keys.create(args.entity, args.name);
      if (args.json) console.log(JSON.stringify({ id: key.id, entity: key.entityName, name: key.name, key: secret }));
      else console.log(`Created key ${key.id} "${key.name}" for entity "${key.entityName}". It is shown only once:\n${secret}`);
    } else if (args.command === 'list') {
      for (const k of await keys.list(args.entity)) {
        const state = k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active';
        console.log(`${k.id}  ${k.prefix}...  ${k.entityName}  "${k.name}"  ${state}  last used ${k.lastUsedAt?.toISOString() ?? 'never'}`);
      }
    } else {
      const revoked = await keys.revoke(args.target);
      if (revoked.length === 0) {
        console.error(`No active key matches "${args.target}"`);
        process.exitCode = 1;
      }
      for (const k of revoked) console.log(`Revoked ${k.id} (${k.prefix}...) of entity "${k.entityName}"`);
    }
  } finally {
    await app.close();
  }
});
