// `npm run sidecar -- --workspace DIR [flags]`: wiring only; see sidecar/cli.ts for the flags.
import { runSidecarCli } from './cli.js';
import { createCatalogs } from './tool-sets.js';

await runSidecarCli(process.argv.slice(2), { createCatalogs });
