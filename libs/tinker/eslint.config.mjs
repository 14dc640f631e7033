import baseConfig, { frameworkFree } from '../../eslint.config.mjs';

// The Tinker SDK's wire protocol (JSON shapes and tinker_public protobuf), shared by the gateway and the workers: plain TypeScript.
export default [...baseConfig, frameworkFree(['@tensorflow/*'])];
