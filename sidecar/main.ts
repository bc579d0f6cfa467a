#!/usr/bin/env node
// `npm run sidecar -- --workspace DIR [flags]`: wiring only; see sidecar/cli.ts for the flags.
import { runSidecarCli } from './cli.js';
import { createLazyCatalogs } from './lazy-catalogs.js';
import { enterUserFolder } from '../src/user-folder.js';
import { stopWithNpmParent } from '../src/stop-with-parent.js';

// Relative paths in the flags mean the folder npm was run in, not the package root npm runs from.
enterUserFolder(process.env);
// Under npx or an npm script, stop (drain, as on SIGTERM) when npm's shell is gone.
stopWithNpmParent(process.env);

// The tool categories load once the sidecar listens (warm()), off the path to the listening line.
await runSidecarCli(process.argv.slice(2), {
  createCatalogs: (config, { logger }) => createLazyCatalogs({ load: async () => (await import('./tool-sets.js')).createCatalogs, config, logger }),
});
