#!/usr/bin/env node
// `npm run sidecar -- --workspace DIR [flags]`: wiring only; see sidecar/cli.ts for the flags.
import { runSidecarCli } from './cli.js';
import { createLazyCatalogs } from './lazy-catalogs.js';
import { enterUserFolder } from '../src/user-folder.js';

// Relative paths in the flags mean the folder npm was run in, not the package root npm runs from.
enterUserFolder(process.env);

// The tool categories load once the sidecar listens (warm()), off the path to the listening line.
await runSidecarCli(process.argv.slice(2), {
  createCatalogs: (config, { logger }) => createLazyCatalogs({ load: async () => (await import('./tool-sets.js')).createCatalogs, config, logger }),
});
