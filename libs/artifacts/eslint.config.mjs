import baseConfig, { frameworkFree } from '../../eslint.config.mjs';

// The store and the cache are framework-free; only the optional Nest module imports Nest.
export default [...baseConfig, { ...frameworkFree(), ignores: ['src/artifacts.module.ts', 'src/artifacts.module.spec.ts', 'src/nest.ts'] }];
