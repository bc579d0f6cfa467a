/** What to exec for a command session: the argv, environment and folder. */
export interface SessionExec {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/**
 * Turns a session's command into what is exec'd, for both kinds of session (a PTY through the PTY
 * library, pipes through `child_process`). This is the one place a session's process is shaped:
 * the sandbox's wrapping (bubblewrap's argv in front, its environment) goes here, the same wrapping
 * run_command gets, so a session is confined exactly like a command. Today it is `/bin/sh -c`.
 *
 * `tty` is passed so the wrapping can keep the process in the PTY's session (a sandbox must not
 * start a new session there, or the command loses its controlling terminal and Ctrl-C).
 */
export function sessionCommandArgv(options: { command: string; cwd: string; env: NodeJS.ProcessEnv; tty: boolean }): SessionExec {
  return { file: '/bin/sh', args: ['-c', options.command], env: options.env, cwd: options.cwd };
}
