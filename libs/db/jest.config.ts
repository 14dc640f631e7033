export default {
  displayName: 'db',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
