/**
 * Makes a process started through npm (`npx tools-runtime-sidecar`, `npx tools-runtime-controller
 * serve`, an npm script) stop when the process that started it is gone. npm passes a SIGTERM on to
 * the shell it runs the command in, and Debian's shell (dash) dies of it without passing it on: the
 * server would be left running, adopted by PID 1. Here the process watches its parent (twice a
 * second, on a timer that keeps nothing alive) and, once it is no longer the one it started under,
 * sends itself SIGTERM: the same drain as a SIGTERM from a supervisor.
 *
 * Only under npm (`npm_command` set): a server started directly, by a supervisor or by `nohup`,
 * keeps running when its starter ends. Returns a function that stops watching.
 */
export function stopWithNpmParent(env: NodeJS.ProcessEnv = process.env, options: { intervalMs?: number } = {}): () => void {
  if (!env.npm_command) return () => {};
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }, options.intervalMs ?? 500);
  timer.unref();
  return () => clearInterval(timer);
}
