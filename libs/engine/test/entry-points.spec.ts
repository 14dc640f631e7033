/**
 * The tensor-free entry points must never load TensorFlow.js: services import them so that
 * they do not register tfjs kernels or hold a backend. Each entry is loaded in a fresh module
 * registry in which loading tfjs-core fails.
 */
function loadWithoutTfjs(entry: string): unknown {
  let loaded: unknown;
  jest.isolateModules(() => {
    jest.doMock('@tensorflow/tfjs-core', () => {
      throw new Error('TensorFlow.js was loaded');
    });
    loaded = require(entry);
  });
  return loaded;
}

describe('tensor-free entry points', () => {
  afterEach(() => jest.dontMock('@tensorflow/tfjs-core'));

  it('the main entry loads TensorFlow.js (so the check below can fail)', () => {
    expect(() => loadWithoutTfjs('../src/index')).toThrow('TensorFlow.js was loaded');
  });

  it.each([
    ['@trainyard/engine/wire', '../src/wire', ['JsonSchemaChecker', 'readChatPrompt', 'PromptError']],
    ['@trainyard/engine/files', '../src/files', ['makeModel', 'parseModelConfig', 'ModelLoadError', 'writePeftAdapter', 'readPeftAdapter', 'initLoraWeights', 'ADAPTER_WEIGHTS_FILE']],
  ])('%s loads without it', (_name, entry, names) => {
    const exports = loadWithoutTfjs(entry) as Record<string, unknown>;
    for (const name of names) expect(exports[name]).toBeDefined();
  });
});
