export default {
  displayName: 'tinker',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
