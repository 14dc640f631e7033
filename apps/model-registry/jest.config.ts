export default {
  displayName: 'model-registry',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
