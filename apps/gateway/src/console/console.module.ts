import { DynamicModule, Module } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway.config';
import { ConsoleKeysController } from './console-keys.controller';
import { ConsoleSessionController } from './console-session.controller';

/**
 * The web console's own routes (sign-in, sign-out, account settings). Its pages are static
 * files (serveConsole) and its data views call the public API with the session cookie.
 */
@Module({})
export class ConsoleModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ConsoleModule,
      controllers: [ConsoleSessionController, ConsoleKeysController],
      providers: [{ provide: GatewayConfig, useValue: config }],
    };
  }
}
