import base, { appImports } from '../../eslint.config.mjs';

// The orchestrator validates training requests with libs/art and loads nothing of the engine
// (tagged engine:none).
export default [...base, appImports()];
