import nx from '@nx/eslint-plugin';

// Module boundaries make the architecture's arrows real:
// - apps never import apps; contracts import nothing of ours;
// - only services that own tables (tag db:owner) may import the db lib;
// - the engine (tfjs) is for workers and the registry's adapter writer only.
export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  { ignores: ['**/dist', '**/node_modules', '**/generated', '**/webpack.config.js', '**/jest.config.ts', 'tmp', 'var'] },
  {
    files: ['**/*.ts'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: true,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:contracts', 'type:messaging', 'type:runtime', 'type:db', 'type:engine'] },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:engine', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:db', onlyDependOnLibsWithTags: ['type:runtime', 'type:messaging', 'type:contracts'] },
            { sourceTag: 'type:messaging', onlyDependOnLibsWithTags: ['type:contracts'] },
            { sourceTag: 'type:runtime', onlyDependOnLibsWithTags: ['type:contracts', 'type:messaging'] },
            { sourceTag: 'db:none', notDependOnLibsWithTags: ['type:db'] },
            { sourceTag: 'engine:none', notDependOnLibsWithTags: ['type:engine'] },
          ],
        },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'Read configuration through the validated config class of the app (libs/runtime validateConfig), not process.env.',
        },
      ],
    },
  },
  {
    // The config loader, scripts and tests legitimately read the environment.
    files: ['**/config/*.ts', '**/*.spec.ts', '**/test/**/*.ts', '**/bench/**/*.ts', '**/cli/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
];

/** Forbids framework imports in a framework-free library (used by contracts and engine). */
export const frameworkFree = (extra = []) => ({
  files: ['**/*.ts'],
  rules: {
    'no-restricted-imports': ['error', { patterns: ['@nestjs/*', '@prisma/*', 'nats', ...extra] }],
  },
});
