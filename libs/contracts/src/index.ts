export * from './errors';
export * from './headers';
export * from './registry/base-models.messages';
export * from './health/health.messages';
export * from './streams';
export * from './subjects';
