import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post } from '@nestjs/common';
import type { ConsoleKeyView, CreatedConsoleKeyView } from '@trainyard/contracts';
import { ApiKeysService } from '../auth/api-keys.service';
import { Caller, CallerParam } from '../auth/caller';
import { ConsoleSessionOnly } from '../auth/console-session-only.decorator';
import { toKeyView } from './console.views';
import { CreateKeyRequest } from './dto/create-key.request';

/** Account settings: the signed-in entity's API keys. */
@Controller('console/api/keys')
@ConsoleSessionOnly()
export class ConsoleKeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Get()
  async list(@CallerParam() caller: Caller): Promise<{ object: 'list'; data: ConsoleKeyView[] }> {
    return { object: 'list', data: (await this.keys.list(caller.entityName)).map(toKeyView) };
  }

  /** The secret is in this reply and nowhere else, ever. */
  @Post()
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  async create(@CallerParam() caller: Caller, @Body() body: CreateKeyRequest): Promise<CreatedConsoleKeyView> {
    const { key, secret } = await this.keys.create(caller.entityName, body.name);
    return { ...toKeyView(key), key: secret };
  }

  @Delete(':key_id')
  async revoke(@CallerParam() caller: Caller, @Param('key_id') keyId: string): Promise<ConsoleKeyView> {
    return toKeyView(await this.keys.revokeOwned(caller.entityId, keyId));
  }
}
