const { appWebpackConfig, ENGINE_ENTRY_POINTS } = require('../../tools/webpack/app-webpack.config');

module.exports = appWebpackConfig(__dirname, { additionalEntryPoints: ENGINE_ENTRY_POINTS });
