export default {
  displayName: 'console',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
