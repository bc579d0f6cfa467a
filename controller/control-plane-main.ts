// `npm run controller -- COMMAND ...`: the control plane's commands. Wiring only.
import { runWorkflowCommand } from './control-plane/cli/workflow-run-command.js';
import { startControllerTelemetry } from './telemetry/controller-telemetry.js';

/** What a command needs from its process; it returns the exit code. */
interface CommandIo {
  argv: string[];
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  signal: AbortSignal;
}

const commands: Record<string, (io: CommandIo) => Promise<number>> = {
  workflow: runWorkflowCommand,
};

const USAGE = `Usage: npm run controller -- COMMAND [options]   (COMMAND --help for its options)

Commands:
  workflow run FILE.json | workflow resume RUN_ID    run one workflow to completion in this process
  workflow list | show RUN_ID | cancel RUN_ID       read or cancel runs in the store, as an operator`;

const controller = new AbortController();
const onSignal = (signal: NodeJS.Signals) => {
  if (controller.signal.aborted) return;
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: `${signal}: stopping` })}\n`);
  controller.abort(new Error(signal));
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const [name, ...rest] = process.argv.slice(2);
const command = name === undefined ? undefined : commands[name];
if (!command) {
  process.stderr.write(`${name === undefined || name === '--help' ? '' : `error: unknown command "${name}"\n\n`}${USAGE}\n`);
  process.exitCode = name === '--help' ? 0 : 2;
} else {
  // Traces and metrics of the commands' turns when OTEL_* asks (no OpenTelemetry module otherwise).
  const telemetry = await startControllerTelemetry({ env: process.env }).catch((error: unknown) => {
    process.stderr.write(`error: telemetry: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  });
  process.exitCode = await command({ argv: rest, env: process.env, stdout: process.stdout, stderr: process.stderr, signal: controller.signal });
  await telemetry?.shutdown();
}
process.off('SIGINT', onSignal);
process.off('SIGTERM', onSignal);
// Everything is closed by now; a handle some library left open must not keep the process up.
setTimeout(() => process.exit(), 2_000).unref();
