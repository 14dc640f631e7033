export default {
  displayName: 'e2e',
  preset: '../../jest.preset.js',
  rootDir: '.',
  // Each file starts a whole stack of processes; give them time to boot.
  testTimeout: 60_000,
};
