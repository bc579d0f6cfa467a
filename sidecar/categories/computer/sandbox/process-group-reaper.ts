import { spawn, type ChildProcess } from 'node:child_process';

/**
 * The supervisor's script, run by `/bin/sh` in a session of its own. It reads `+PGID` (a command
 * started) and `-PGID` (it ended: forget the group if nothing of it is left) from the pipe whose
 * other end only the sidecar holds. The kernel closes that end however the sidecar ends (exit,
 * crash, SIGKILL, the OOM killer), so `read` meets end-of-file and the script sends SIGTERM to every
 * group it still knows, then SIGKILL after the grace. dash and bash both take `kill -0 -PGID`.
 */
const SUPERVISOR_SCRIPT = `
trap '' INT HUP
groups=' '
while IFS= read -r line; do
  case $line in
    +[0-9]*) groups="$groups\${line#+} " ;;
    -[0-9]*)
      g=\${line#-}
      case $groups in
        *" $g "*) kill -0 "-$g" 2>/dev/null || groups="\${groups%% $g *} \${groups#* $g }" ;;
      esac ;;
  esac
done
live=''
for g in $groups; do kill -TERM "-$g" 2>/dev/null && live="$live $g"; done
[ -n "$live" ] || exit 0
sleep "$1"
for g in $live; do kill -KILL "-$g" 2>/dev/null; done
`;

/** Keeps commands' process groups from outliving the sidecar. */
export interface ProcessGroupReaper {
  /** A command's process group started: from now on it dies with the sidecar. */
  track(group: number): void;
  /**
   * The command ended. Its group is forgotten once no process of it is left; what it left running
   * in the background (a server it started) is checked again every few seconds, and dies with the
   * sidecar meanwhile.
   */
  release(group: number): void;
  /** Stops supervising: the supervisor kills the groups it still knows and exits. */
  close(): void;
}

const groupAlive = (group: number) => {
  try {
    process.kill(-group, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Starts the supervisor: a `/bin/sh` process (about 1 MiB, unlike a second Node) in its own
 * session, so a signal to the sidecar's process group does not reach it, holding the read end of a
 * pipe from the sidecar. When the sidecar ends, however it ends, the pipe closes and the
 * supervisor SIGTERMs, then after `killGraceSeconds` SIGKILLs, every command group still alive.
 * Neither the supervisor nor its pipe keeps the sidecar's event loop alive. Never throws: when the
 * supervisor cannot start, commands still run (and are still killed on abort), without this net.
 */
export function startProcessGroupReaper(options: { killGraceSeconds?: number } = {}): ProcessGroupReaper {
  let supervisor: ChildProcess | undefined;
  try {
    supervisor = spawn('/bin/sh', ['-c', SUPERVISOR_SCRIPT, 'tools-runtime-reaper', String(options.killGraceSeconds ?? 2)], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    supervisor.on('error', () => {
      supervisor = undefined;
    });
    supervisor.stdin!.on('error', () => {
      supervisor = undefined;
    });
    supervisor.unref();
    (supervisor.stdin as unknown as { unref?: () => void }).unref?.();
  } catch {
    supervisor = undefined;
  }
  // Groups whose command ended with something of them still running: checked until empty.
  const lingering = new Set<number>();
  let timer: NodeJS.Timeout | undefined;
  const send = (line: string) => {
    if (supervisor?.stdin?.writable) supervisor.stdin.write(`${line}\n`);
  };
  const sweep = () => {
    for (const group of lingering) {
      if (!groupAlive(group)) {
        lingering.delete(group);
        send(`-${group}`);
      }
    }
    if (lingering.size === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  return {
    track(group) {
      if (Number.isSafeInteger(group) && group > 1) send(`+${group}`);
    },
    release(group) {
      if (!Number.isSafeInteger(group) || group <= 1) return;
      if (!groupAlive(group)) {
        send(`-${group}`);
        return;
      }
      lingering.add(group);
      timer ??= setInterval(sweep, 5_000).unref();
    },
    close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      supervisor?.stdin?.end();
      supervisor = undefined;
    },
  };
}

let shared: ProcessGroupReaper | undefined;

/**
 * The sidecar process's one reaper, started on the first command (a sidecar that runs no command
 * starts no supervisor). It lives as long as the process.
 */
export function sharedProcessGroupReaper(): ProcessGroupReaper {
  shared ??= startProcessGroupReaper();
  return shared;
}
