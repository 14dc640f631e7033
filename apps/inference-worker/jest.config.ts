export default {
  displayName: 'inference-worker',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
