export default {
  displayName: 'health',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
