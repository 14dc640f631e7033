const { NxAppWebpackPlugin } = require('@nx/webpack/app-plugin');
const { basename, join } = require('node:path');

/**
 * Scripts an app that runs the engine (@trainyard/engine) must have beside its main.js:
 * the matmul threads' helper (libs/engine/src/kernels/matmul-threads.ts starts each helper
 * thread with it, found beside the module that holds it).
 */
const ENGINE_ENTRY_POINTS = [{ entryName: 'matmul-threads.worker', entryPath: join(__dirname, '../../libs/engine/src/kernels/matmul-threads.worker.ts') }];

/**
 * The one webpack set-up of every Node app: bundle the app and our libs, keep node_modules
 * external (tfjs finds its .wasm files, Prisma its runtime), emit dist/apps/<app>/main.js.
 */
function appWebpackConfig(appDir, options = {}) {
  return {
    output: { path: join(__dirname, '../../dist/apps', basename(appDir)), clean: true },
    plugins: [
      new NxAppWebpackPlugin({
        target: 'node',
        compiler: 'tsc',
        main: './src/main.ts',
        tsConfig: './tsconfig.app.json',
        optimization: false,
        outputHashing: 'none',
        sourceMap: true,
        generatePackageJson: true,
        ...options,
      }),
    ],
  };
}

module.exports = { appWebpackConfig, ENGINE_ENTRY_POINTS };
