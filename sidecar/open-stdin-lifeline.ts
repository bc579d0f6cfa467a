import { fstatSync, type Stats } from 'node:fs';
import { errorMessage, ToolRuntimeError } from '../src/errors.js';

/** A lifeline on stdin, checked and armed by `openStdinLifeline`. */
export interface StdinLifeline {
  /**
   * Starts reading stdin (whatever arrives is discarded) and calls `onEnd` once when it reaches
   * EOF or fails: the last process holding its write end has closed it or died. Call it once.
   */
  watch(onEnd: (why: string) => void): void;
}

/**
 * The sidecar's `--exit-on-stdin-eof` lifeline. The process that spawns the sidecar gives it a pipe
 * as stdin and keeps the write end to itself (Node's spawn opens it close-on-exec, so no other child
 * inherits it). However that process ends, SIGKILL included, the kernel closes the write end and the
 * sidecar reads EOF: no signal handler in the spawner is involved, and an intermediate process (the
 * tsx CLI in development) passes the pipe on with the rest of its stdio.
 *
 * Also makes stdout and stderr tolerate a reader that is gone: once the spawner died, a log line
 * would otherwise fail with EPIPE and crash the sidecar before it could drain.
 *
 * @throws ToolRuntimeError `invalid_request` when stdin is not a pipe or a socket (a terminal,
 *   /dev/null, a file: none of them ever reaches EOF when the spawner dies, or reaches it at once).
 */
export function openStdinLifeline(options: { stdin?: NodeJS.ReadStream; outputs?: NodeJS.WriteStream[] } = {}): StdinLifeline {
  const stdin = options.stdin ?? process.stdin;
  const fd = (stdin as { fd?: number }).fd ?? 0;
  let stats: Stats;
  try {
    stats = fstatSync(fd);
  } catch (error) {
    throw new ToolRuntimeError('invalid_request', `--exit-on-stdin-eof: stdin (fd ${fd}) is not open: ${errorMessage(error)}`);
  }
  if (!stats.isFIFO() && !stats.isSocket()) {
    throw new ToolRuntimeError(
      'invalid_request',
      `--exit-on-stdin-eof needs stdin to be a pipe whose write end only the spawning process holds, but it is ${describeFile(stats)}`,
    );
  }
  for (const output of options.outputs ?? [process.stdout, process.stderr]) {
    output.on('error', (error: NodeJS.ErrnoException) => {
      // The spawner (the reader) is gone: what is written from now on has nowhere to go.
      if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
      throw error;
    });
  }
  return {
    watch(onEnd) {
      let ended = false;
      const end = (why: string) => {
        if (ended) return;
        ended = true;
        onEnd(why);
      };
      stdin.on('end', () => end('stdin reached EOF'));
      stdin.on('error', (error) => end(`stdin failed: ${errorMessage(error)}`));
      stdin.on('close', () => end('stdin closed'));
      stdin.on('data', () => {});
      stdin.resume();
    },
  };
}

function describeFile(stats: Stats): string {
  if (stats.isCharacterDevice()) return 'a character device (a terminal, or /dev/null when stdin is ignored)';
  if (stats.isFile()) return 'a regular file';
  if (stats.isDirectory()) return 'a directory';
  return 'neither a pipe nor a socket';
}
