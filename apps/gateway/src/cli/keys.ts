import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DbModule } from '@trainyard/db';
import { DATABASE_URL_PATTERN, loadConfig, ProcessHealthModule, runMain } from '@trainyard/runtime';
import { Matches } from 'class-validator';
import { parseArgs } from 'node:util';
import { ApiKeysRepository } from '../auth/api-keys.repository';
import { ApiKeysService } from '../auth/api-keys.service';

const USAGE = `Usage:
  keys create --entity <entity> [--name <name>]   create a key; the secret is printed once
  keys list [--entity <entity>]                    list keys (never their secrets)
  keys revoke <key id or prefix>                   revoke a key; it stops working at once`;

class KeysCliConfig {
  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;
}

runMain(async () => {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { entity: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } },
  });
  const [command, target] = positionals;
  if (!['create', 'list', 'revoke'].includes(command) || (command === 'create' && !values.entity) || (command === 'revoke' && !target)) {
    console.error(USAGE);
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
    if (command === 'create') {
      const { key, secret } = await keys.create(values.entity as string, values.name ?? 'default');
      if (values.json) console.log(JSON.stringify({ id: key.id, entity: key.entityName, name: key.name, key: secret }));
      else console.log(`Created key ${key.id} "${key.name}" for entity "${key.entityName}". It is shown only once:\n${secret}`);
    } else if (command === 'list') {
      for (const k of await keys.list(values.entity)) {
        const state = k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active';
        console.log(`${k.id}  ${k.prefix}...  ${k.entityName}  "${k.name}"  ${state}  last used ${k.lastUsedAt?.toISOString() ?? 'never'}`);
      }
    } else {
      const revoked = await keys.revoke(target);
      if (revoked.length === 0) {
        console.error(`No active key matches "${target}"`);
        process.exitCode = 1;
      }
      for (const k of revoked) console.log(`Revoked ${k.id} (${k.prefix}...) of entity "${k.entityName}"`);
    }
  } finally {
    await app.close();
  }
});
