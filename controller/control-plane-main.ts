// `npm run controller -- COMMAND ...`: the control plane's commands. Wiring only: each command is
// one line of the table below, its code in controller/control-plane/.
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
const onSignal = () => {
  if (controller.signal.aborted) process.exit(130);
  process.stderr.write('\nstopping (again to force)\n');
  controller.abort(new Error('interrupted'));
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
