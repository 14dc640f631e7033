import 'reflect-metadata';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { GatewayConfig } from './config/gateway.config';
import { GatewayModule } from './gateway.module';
import { configureHttp } from './http/configure-http';

runMain(async () => {
  const config = loadConfig(GatewayConfig);
  await bootstrap(GatewayModule.forRoot(config), {
    name: 'gateway',
    config,
    configure: (app) => configureHttp(app, config),
  });
});
