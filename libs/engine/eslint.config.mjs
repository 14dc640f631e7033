import baseConfig, { frameworkFree } from '../../eslint.config.mjs';

// assembly/ holds AssemblyScript, which its own compiler checks (scripts/build-kernels.mjs).
export default [...baseConfig, frameworkFree(), { ignores: ['assembly'] }];
