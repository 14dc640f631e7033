import baseConfig, { frameworkFree } from '../../eslint.config.mjs';

export default [...baseConfig, frameworkFree()];
