export default {
  displayName: 'artifacts',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
