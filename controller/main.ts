// `npm start`: one agent turn from one command. Wiring only; the CLI lives in cli.ts.
import { runCli } from './cli.js';

const controller = new AbortController();
let interrupts = 0;
const onInterrupt = () => {
  interrupts++;
  if (interrupts > 1) process.exit(130);
  process.stderr.write('\ninterrupted: aborting the turn (Ctrl-C again to force)\n');
  controller.abort(new Error('interrupted'));
};
process.on('SIGINT', onInterrupt);
process.on('SIGTERM', onInterrupt);

process.exitCode = await runCli({
  argv: process.argv.slice(2),
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
process.off('SIGINT', onInterrupt);
process.off('SIGTERM', onInterrupt);
