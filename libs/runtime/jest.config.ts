export default {
  displayName: 'runtime',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
