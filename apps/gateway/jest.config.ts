export default {
  displayName: 'gateway',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
