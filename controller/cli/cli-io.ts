// Apart from cli.ts on purpose: the subcommands (workflow, approvals) take the same process I/O,
// and cli.ts dispatches to them, so naming it in cli.ts made a circle.
import type { EarlySidecar } from './start-early-sidecar.js';

/** What the CLI needs from its process. */
export interface CliIo {
  argv: string[];
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Ctrl-C: aborts the turn and stops the sidecar. */
  signal: AbortSignal;
  /** Where approvals are answered (default `process.stdin`). */
  stdin?: NodeJS.ReadableStream;
  /** Whether a person is at `stdin` (default `process.stdin.isTTY`); without one, approvals are denied. */
  isTerminal?: boolean;
  /** Called once the model turn has ended (what follows: waiting for workflow runs, the console serving on). */
  onTurnEnded?: () => void;
  /** The sidecar child `npm start` began before loading this module (`startEarlySidecar`), used instead of starting one. */
  earlySidecar?: EarlySidecar;
}
