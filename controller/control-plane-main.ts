#!/usr/bin/env node
// `npm run controller -- COMMAND ...`: the control plane's commands. Wiring only.
import { runWorkflowCommand } from './control-plane/cli/workflow-run-command.js';
import { runApprovalsCommand } from './control-plane/cli/approvals-command.js';
import { runServe } from './control-plane/cli/serve/run-serve.js';
import { runServersCommand } from './control-plane/cli/servers-command.js';
import { startControllerTelemetry } from './telemetry/controller-telemetry.js';
import { enterUserFolder } from '../src/user-folder.js';
import { stopWithNpmParent } from '../src/stop-with-parent.js';

// Relative paths (a workflow file, --agents, --data-dir) mean the folder npm was run in, not the package root.
enterUserFolder(process.env);
// Under npx or an npm script, stop (as on SIGTERM) when npm's shell is gone.
stopWithNpmParent(process.env);

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
  serve: runServe,
  approvals: (io) => runApprovalsCommand(io.argv, io),
  servers: runServersCommand,
};

const USAGE = `Usage: npm run controller -- COMMAND [options]   (COMMAND --help for its options)

Commands:
  workflow run FILE.json | workflow resume RUN_ID    run one workflow to completion in this process
  workflow list | show RUN_ID | cancel RUN_ID       read or cancel runs in the store, as an operator
  serve --agents FILE                                run schedules, background jobs and workflows, serve ControlPlaneService
  approvals list | approve ID | deny ID              the calls of job and scheduled turns waiting for a decision
  servers                                            the sidecars and control planes running here, with their token files

Any command also takes --metrics-listen HOST:PORT (Prometheus metrics at /metrics); OTEL_* sends traces and metrics.`;

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
  // --help is asked for: stdout and 0; anything else is a usage error.
  const help = name === '--help' || name === '-h';
  (help ? process.stdout : process.stderr).write(`${name === undefined || help ? '' : `error: unknown command "${name}"\n\n`}${USAGE}\n`);
  process.exitCode = help ? 0 : 2;
} else {
  // Traces and metrics of the commands' turns when OTEL_* or --metrics-listen ADDR (any command;
  // taken out before the command parses its flags) asks; no OpenTelemetry module otherwise.
  const at = rest.findIndex((arg) => arg === '--metrics-listen' || arg.startsWith('--metrics-listen='));
  const metricsListen = at < 0 ? undefined : rest[at]!.includes('=') ? rest[at]!.slice('--metrics-listen='.length) : (rest[at + 1] ?? '');
  if (at >= 0) rest.splice(at, rest[at]!.includes('=') ? 1 : 2);
  const telemetry = await startControllerTelemetry({ env: process.env, ...(metricsListen !== undefined ? { metricsListen } : {}) }).catch((error: unknown) => {
    process.stderr.write(`error: telemetry: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  });
  if (telemetry?.metricsUrl) process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'metrics listening', url: telemetry.metricsUrl })}\n`);
  process.exitCode = await command({ argv: rest, env: process.env, stdout: process.stdout, stderr: process.stderr, signal: controller.signal });
  await telemetry?.shutdown();
}
process.off('SIGINT', onSignal);
process.off('SIGTERM', onSignal);
// Everything is closed by now; a handle some library left open must not keep the process up.
setTimeout(() => process.exit(), 2_000).unref();
