import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKeyCache } from './api-key-cache';
import { ApiKeyChangesListener } from './api-key-changes.listener';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { ConsoleSessionsRepository } from './console-sessions.repository';
import { ConsoleSessionsService } from './console-sessions.service';

/**
 * Who is calling: API keys (with the in-memory cache of verified keys and the listener that
 * keeps it in step with the database), the console's sessions, and the global guard that
 * checks either. Global, as the guard is: the console's routes use the same services.
 */
@Module({})
export class AuthModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: AuthModule,
      global: true,
      providers: [
        { provide: GatewayConfig, useValue: config },
        {
          provide: ApiKeyCache,
          useFactory: () => new ApiKeyCache({ ttlMs: config.API_KEY_CACHE_TTL_MS, maxEntries: config.API_KEY_CACHE_MAX_ENTRIES }),
        },
        ApiKeyChangesListener,
        ApiKeysRepository,
        ApiKeysService,
        ConsoleSessionsRepository,
        ConsoleSessionsService,
        { provide: APP_GUARD, useClass: ApiKeyGuard },
      ],
      exports: [ApiKeysService, ConsoleSessionsService, GatewayConfig],
    };
  }
}
