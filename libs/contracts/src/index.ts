export * from './errors';
export * from './headers';
export * from './health/health.messages';
export * from './streams';
export * from './subjects';
