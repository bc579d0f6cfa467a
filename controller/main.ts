#!/usr/bin/env node
// `npm start`: one agent turn from one command. Wiring only; the CLI lives in cli/cli.ts.
import { setFlagsFromString } from 'node:v8';
import { startEarlySidecar } from './cli/start-early-sidecar.js';
import { enterUserFolder } from '../src/user-folder.js';

// Relative paths in the flags mean the folder npm was run in, not the package root npm runs from.
enterUserFolder(process.env);

// Node's fetch parses HTTP with llhttp, WebAssembly: V8 compiles it with Liftoff, then again with
// TurboFan on background threads, and the process's exit waits for that compile (20-60 ms at the
// end of every npm start on a busy 2-core machine, and a core taken from the sidecar meanwhile).
// One turn's few model requests parse as well with Liftoff's code.
setFlagsFromString('--liftoff-only');

const controller = new AbortController();
let firstInterrupt = 0;
// After the turn (waiting for the workflow runs it started, or the console serving on) there is no turn to abort.
let turnEnded = false;
const onInterrupt = () => {
  // One Ctrl-C can arrive twice (from the terminal and relayed by tsx): only a later one forces.
  if (firstInterrupt > 0) {
    if (Date.now() - firstInterrupt > 1_000) process.exit(130);
    return;
  }
  firstInterrupt = Date.now();
  process.stderr.write(`\ninterrupted: ${turnEnded ? 'stopping' : 'aborting the turn'} (Ctrl-C again to force)\n`);
  controller.abort(new Error('interrupted'));
};
process.on('SIGINT', onInterrupt);
process.on('SIGTERM', onInterrupt);

// The sidecar child starts first (a light module, spawned synchronously), then the rest of the
// controller loads while the sidecar starts up on the other core: the two start-ups overlap.
const argv = process.argv.slice(2);
const earlySidecar = startEarlySidecar({ argv, env: process.env, signal: controller.signal });
const { runCli } = await import('./cli/cli.js');
process.exitCode = await runCli({
  argv,
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
  onTurnEnded: () => {
    turnEnded = true;
  },
  ...(earlySidecar ? { earlySidecar } : {}),
});
process.off('SIGINT', onInterrupt);
process.off('SIGTERM', onInterrupt);
