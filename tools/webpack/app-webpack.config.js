const { NxAppWebpackPlugin } = require('@nx/webpack/app-plugin');
const { basename, join } = require('node:path');

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

module.exports = { appWebpackConfig };
