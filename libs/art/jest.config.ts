export default {
  displayName: 'art',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
