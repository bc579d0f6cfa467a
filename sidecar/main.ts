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

// The tool categories (and zod with them) load with the first turn, off the path to the listening
// line and out of an idle sidecar's memory; at once after listening only when something in them
// must start with the sidecar (--brain, --mcp-servers).
await runSidecarCli(process.argv.slice(2), {
  createCatalogs: (config, { logger }) => createLazyCatalogs({ load: async () => (await import('./tool-sets.js')).createCatalogs, config, logger, warm: 'when-something-starts' }),
});
