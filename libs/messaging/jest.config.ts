export default {
  displayName: 'messaging',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
