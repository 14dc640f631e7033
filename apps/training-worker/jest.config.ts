export default {
  displayName: 'training-worker',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
