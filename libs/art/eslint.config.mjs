import baseConfig, { frameworkFree } from '../../eslint.config.mjs';

// ART's request shapes, parsed once by the training orchestrator: plain TypeScript.
export default [...baseConfig, frameworkFree(['@tensorflow/*'])];
