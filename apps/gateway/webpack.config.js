const { appWebpackConfig } = require('../../tools/webpack/app-webpack.config');

// The key command (dist/apps/gateway/keys.js) ships beside the gateway that owns the keys.
module.exports = appWebpackConfig(__dirname, {
  additionalEntryPoints: [{ entryName: 'keys', entryPath: './src/cli/keys.ts' }],
});
