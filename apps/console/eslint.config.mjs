import base, { appImports } from '../../eslint.config.mjs';

export default [...base, appImports()];
