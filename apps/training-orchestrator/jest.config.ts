export default {
  displayName: 'training-orchestrator',
  preset: '../../jest.preset.js',
  rootDir: '.',
};
