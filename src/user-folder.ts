import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The folder a user's relative paths mean: where they ran the command. npm runs a script from the
 * package root and leaves the folder it was run in as `INIT_CWD`, so under `npm start`, `npm run
 * controller` or `npm run sidecar` (from a subfolder, or with `--prefix`) that folder is `INIT_CWD`.
 * It counts only while this process still runs in the root of the package npm ran
 * (`npm_package_json`): a process started some other way that merely inherited npm's variables
 * (a test under `npm test` spawning a child elsewhere) keeps its own working directory.
 */
export function userFolder(env: NodeJS.ProcessEnv, cwd = process.cwd()): string {
  const initCwd = env.INIT_CWD;
  const packageJson = env.npm_package_json;
  if (!initCwd || !packageJson) return cwd;
  try {
    return realpathSync(dirname(packageJson)) === realpathSync(cwd) ? realpathSync(initCwd) : cwd;
  } catch {
    // INIT_CWD or the package is gone: nothing better than where we are.
    return cwd;
  }
}

/**
 * Makes the folder the user ran the command in ({@link userFolder}) this process's working
 * directory, so every relative path they give (a workflow file, --workspace, --agents, --data-dir,
 * --token-file, --events-file ...) resolves against it by one rule, wherever it is read. Called
 * first by each entry point; the project's own files are found from `import.meta.url`, never from
 * the working directory.
 */
export function enterUserFolder(env: NodeJS.ProcessEnv): void {
  const folder = userFolder(env);
  if (folder !== process.cwd()) process.chdir(folder);
}
