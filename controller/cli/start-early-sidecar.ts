import { connectCliSidecar, type CliSidecar } from './cli-sidecar.js';
import { parseCliOptions } from './cli-options.js';
import { takeConsoleFlags } from '../console/console-flags.js';

/** A sidecar child `npm start` began before it loaded the rest of the controller. */
export interface EarlySidecar {
  /**
   * Hands the sidecar to the turn: replays the progress lines said so far through `progress` and
   * resolves as `connectCliSidecar` would have.
   *
   * @throws what `connectCliSidecar` throws.
   */
  adopt(progress: (line: string) => void): Promise<CliSidecar>;
  /** Stops the child (once it has started or failed) and removes its temporary workspace. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the sidecar child of `npm start` right away, from `argv` as the CLI will read it, so that
 * its start-up (a second node process, on the other core) overlaps the controller's own loading of
 * grpc-js, zod, the openai SDK and fetch. Returns undefined when the CLI will start none: a
 * running `--sidecar`, `--help`, or arguments the CLI will refuse (it reports them itself).
 *
 * Nothing else happens early: the child, its lifeline, its workspace and the errors it can give
 * are those of `connectCliSidecar`, surfaced where the CLI asks for the sidecar.
 */
export function startEarlySidecar(options: { argv: string[]; env: NodeJS.ProcessEnv; signal: AbortSignal }): EarlySidecar | undefined {
  let parsed: ReturnType<typeof parseCliOptions>;
  let consoleTokenFile: string | undefined;
  try {
    const taken = takeConsoleFlags(options.argv);
    consoleTokenFile = taken.console?.tokenFile;
    parsed = parseCliOptions(taken.argv, options.env);
  } catch {
    return undefined;
  }
  if (parsed.help || parsed.sidecar) return undefined;
  const cleanups: Array<() => Promise<void>> = [];
  const lines: string[] = [];
  let say: (line: string) => void = (line) => {
    lines.push(line);
  };
  const ready = connectCliSidecar({ ...parsed, hide: consoleTokenFile ? [consoleTokenFile] : [] }, cleanups, options.signal, (line) => say(line));
  ready.catch(() => {}); // surfaced by adopt()
  let closing: Promise<void> | undefined;
  return {
    async adopt(progress) {
      for (const line of lines.splice(0)) progress(line);
      say = progress;
      return ready;
    },
    close() {
      closing ??= ready
        .then(
          () => {},
          () => {},
        )
        .then(async () => {
          for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
        });
      return closing;
    },
  };
}
