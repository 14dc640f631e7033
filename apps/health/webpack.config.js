const { appWebpackConfig } = require('../../tools/webpack/app-webpack.config');

module.exports = appWebpackConfig(__dirname);
