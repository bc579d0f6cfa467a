import { prepareCommand, type PreparedCommand, type ProcessPolicy } from '../sandbox/index.js';

/**
 * In a sandboxed terminal, the command's shell first takes the terminal's foreground (`set -m`
 * makes dash put itself in a process group of its own and hand it the terminal), then becomes a
 * plain `sh -c command`. Without it, Ctrl-C's SIGINT would go to bubblewrap's outer process too,
 * which would die of it and take the whole sandbox (a REPL's KeyboardInterrupt) with it. `exec`
 * leaves no job-control shell behind: one would try, at its exit, to give the terminal back to a
 * group outside the sandbox's PID namespace, fail, and turn the exit code into 2.
 */
const FOREGROUND = 'set -m; /bin/sh -c "$1"; exit $?';

/**
 * Turns a session's command into what is exec'd, for both kinds of session (a PTY through the PTY
 * library, pipes through `child_process`): the sandbox's own `prepareCommand`, the same wrapping
 * run_command gets (bubblewrap's argv in front under `workspace-write` and `read-only`, the
 * command itself under `off`), so a session is confined exactly like a command.
 *
 * Two changes for a sandboxed terminal: `terminal: true` has the sandbox leave out bubblewrap's
 * `--new-session`, or the command would lose the PTY as its controlling terminal, and with it
 * Ctrl-C, job control and `read -p` (the only terminal such a command can reach is its own PTY,
 * whose input is the model's anyway); and the command takes the terminal's foreground (see
 * FOREGROUND).
 *
 * @throws ToolRuntimeError `sandbox_unavailable` when the policy needs the sandbox and this machine
 *   cannot give it: nothing may run then.
 */
export async function sessionCommandArgv(options: { command: string; cwd: string; env: NodeJS.ProcessEnv; tty: boolean; policy: ProcessPolicy }): Promise<PreparedCommand> {
  const sandboxedTty = options.tty && options.policy.mode !== 'off';
  const argv: [string, ...string[]] = sandboxedTty ? ['/bin/bash', '-c', FOREGROUND, 'bash', options.command] : ['/bin/sh', '-c', options.command];
  return prepareCommand({ argv, cwd: options.cwd, env: options.env, policy: options.policy, terminal: options.tty });
}
