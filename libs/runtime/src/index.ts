export * from './bootstrap';
export * from './config/base-service.config';
export * from './config/load-config';
export * from './health/component-check';
export * from './health/health.module';
export * from './health/readiness.service';
export * from './service-runtime.module';
export * from './worker-presence.module';
