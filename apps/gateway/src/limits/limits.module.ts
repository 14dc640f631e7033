import { DynamicModule, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { GatewayConfig } from '../config/gateway.config';
import { KeyLimiter } from './key-limiter';
import { KeyLimitsInterceptor } from './key-limits.interceptor';

/**
 * Per-API-key rate and concurrency limits (KEY_RATE_LIMIT_*, KEY_CONCURRENCY_LIMIT), kept in
 * this replica's memory: with N gateway replicas behind a balancer a key gets up to N times
 * the allowance. The gateway-wide bound (MAX_IN_FLIGHT_REQUESTS) and the server timeouts are
 * applied in configureHttp, before routing.
 */
@Module({})
export class LimitsModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    const limiter = new KeyLimiter({
      requests: config.KEY_RATE_LIMIT_REQUESTS,
      windowMs: config.KEY_RATE_LIMIT_WINDOW_MS,
      concurrent: config.KEY_CONCURRENCY_LIMIT,
    });
    return {
      module: LimitsModule,
      providers: [{ provide: KeyLimiter, useValue: limiter }, { provide: APP_INTERCEPTOR, useClass: KeyLimitsInterceptor }],
    };
  }
}
