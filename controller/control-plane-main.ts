// `npm run controller -- COMMAND ...`: the control plane's commands. Wiring only: each command is
// one line of the table below, its code in controller/control-plane/.
// (Merged in h1-turn-reverse: h2a's command table, h2b's serve and its signal handling.)
import type { CliIo } from './cli.js';
import { runApprovalsCommand } from './control-plane/approvals/approvals-command.js';
import { runWorkflowResumeCommand, runWorkflowRunCommand } from './control-plane/cli/workflow-run-command.js';
import { runServe } from './control-plane/serve/run-serve.js';

type Command = (args: string[], io: CliIo) => Promise<number>;

const commands: Record<string, Command> = {
  'workflow run': runWorkflowRunCommand,
  'workflow resume': runWorkflowResumeCommand,
  serve: (args, io) => runServe({ ...io, argv: args }),
  approvals: runApprovalsCommand,
};

const usage = `Usage: npm run controller -- COMMAND [options]

Commands:
${Object.keys(commands)
  .map((name) => `  ${name}`)
  .join('\n')}

Run a command with --help for its options.`;

const controller = new AbortController();
const onSignal = (signal: NodeJS.Signals) => {
  if (controller.signal.aborted) return;
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: `${signal}: stopping` })}\n`);
  controller.abort(new Error(signal));
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const argv = process.argv.slice(2);
// The longest command name that the arguments start with ("workflow run" before "workflow").
const name = Object.keys(commands)
  .sort((a, b) => b.split(' ').length - a.split(' ').length)
  .find((candidate) => candidate.split(' ').every((word, index) => argv[index] === word));
if (!name) {
  const help = argv.length === 0 || argv[0] === '--help' || argv[0] === '-h';
  (help ? process.stdout : process.stderr).write(`${help ? '' : `error: unknown command "${argv.join(' ')}"\n\n`}${usage}\n`);
  process.exitCode = help ? 0 : 2;
} else {
  process.exitCode = await commands[name]!(argv.slice(name.split(' ').length), {
    argv,
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    signal: controller.signal,
  });
}
process.off('SIGINT', onSignal);
process.off('SIGTERM', onSignal);
// Everything is closed by now; a handle some library left open must not keep the process up.
setTimeout(() => process.exit(), 2_000).unref();
