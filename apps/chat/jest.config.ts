export default {
  displayName: 'chat',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
