import baseConfig from '../../eslint.config.mjs';

// Test harness code configures the processes it starts through their environment.
export default [...baseConfig, { files: ['**/*.ts'], rules: { 'no-restricted-syntax': 'off' } }];
