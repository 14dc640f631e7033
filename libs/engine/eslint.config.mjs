import baseConfig, { frameworkFree } from '../../eslint.config.mjs';

// kernels/ holds AssemblyScript, which its own compiler checks (scripts/build-kernels.mjs).
export default [...baseConfig, frameworkFree(), { ignores: ['kernels'] }];
