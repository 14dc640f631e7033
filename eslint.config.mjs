import nx from '@nx/eslint-plugin';

function boundaries(forTests = []) {
  const libs = (...tags) => [...tags, ...forTests];
  return {
    enforceBuildableLibDependency: true,
    allow: [],
    depConstraints: [
      { sourceTag: 'type:app', onlyDependOnLibsWithTags: libs('type:contracts', 'type:messaging', 'type:runtime', 'type:db', 'type:engine', 'type:art', 'type:tinker', 'type:artifacts') },
      { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: libs() },
      // ART's request shapes parse into the contracts' training inputs, and know nothing else of ours.
      { sourceTag: 'type:art', onlyDependOnLibsWithTags: libs('type:contracts') },
      { sourceTag: 'type:engine', onlyDependOnLibsWithTags: libs() },
      // The Tinker SDK's wire protocol (JSON shapes, tinker_public protobuf) knows nothing else of ours.
      { sourceTag: 'type:tinker', onlyDependOnLibsWithTags: libs() },
      // The artifact store (content-addressed objects on disk or S3) knows nothing else of ours.
      { sourceTag: 'type:artifacts', onlyDependOnLibsWithTags: libs() },
      { sourceTag: 'type:messaging', onlyDependOnLibsWithTags: libs('type:contracts') },
      { sourceTag: 'type:runtime', onlyDependOnLibsWithTags: libs('type:contracts', 'type:messaging') },
      { sourceTag: 'type:db', onlyDependOnLibsWithTags: libs('type:runtime', 'type:messaging', 'type:contracts') },
      { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:contracts'] },
      { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:contracts', 'type:testing', 'type:engine', 'type:art', 'type:tinker', 'type:artifacts'] },
      // The web console runs in the browser: of ours, only the contracts (framework-free).
      { sourceTag: 'type:web', onlyDependOnLibsWithTags: libs('type:contracts') },
      { sourceTag: 'db:none', notDependOnLibsWithTags: ['type:db'] },
      { sourceTag: 'engine:none', notDependOnLibsWithTags: ['type:engine'] },
    ],
  };
}

// Module boundaries make the architecture's arrows real: apps never import apps (no lib
// tag allows type:app); the web console (type:web) only the contracts; contracts and engine
// import nothing of ours, and ART's request shapes (type:art) only the contracts; apps tagged db:none
// (they own no tables) cannot import the db lib, and apps tagged engine:none cannot load
// tfjs; only tests may use the test harness.
export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  // libs/engine/assembly holds AssemblyScript, which its own compiler checks (scripts/build-kernels.mjs).
  { ignores: ['**/dist', '**/node_modules', '**/generated', '**/webpack.config.js', '**/jest.config.ts', 'tmp', 'var', 'libs/engine/assembly'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@nx/enforce-module-boundaries': ['error', boundaries()],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'Read configuration through the validated config class of the app (loadConfig in libs/runtime), not process.env.',
        },
      ],
    },
  },
  {
    // Tests may also use the shared test harness (type:testing); production code may not.
    files: ['**/*.spec.ts', '**/test/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': ['error', boundaries(['type:testing'])] },
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

/**
 * The imports every app is refused: `nats` (apps reach NATS through libs/messaging's MessageBus
 * and RpcClient, typed by the contracts' subjects and queues), plus an app's own `extra` paths.
 */
export const appImports = (extra = []) => ({
  files: ['**/*.ts', '**/*.tsx'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        paths: [
          { name: 'nats', message: 'Use MessageBus or RpcClient from @trainyard/messaging, typed by the subjects and work queues in @trainyard/contracts.' },
          ...extra,
        ],
      },
    ],
  },
});
