import baseConfig, { frameworkFree } from '../../eslint.config.mjs';

// Contracts are shared by both sides of every message: plain TypeScript only.
export default [...baseConfig, frameworkFree(['@tensorflow/*', 'class-validator', 'rxjs'])];
