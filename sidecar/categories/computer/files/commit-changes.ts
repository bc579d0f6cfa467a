import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, mkdir, open, rename, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { ToolRuntimeError } from '../../../../src/index.js';
import { procPath, sameIdentity, type FileIdentity, type OpenRoot, type Walked } from './walk-workspace.js';

/** One file to write or delete, as part of an all-or-nothing commit. */
export type FileChange =
  | {
      path: string;
      content: string | Buffer;
      /** What the caller saw at `path`: the commit fails if it is no longer so. Unset: overwrite whatever is there. */
      expect?: FileIdentity | 'absent';
      /** The bytes the caller read there, to put back if a later step of the commit fails. */
      previous?: Buffer;
      /** Permission bits of a file created anew (default 0o666, less the umask); an overwritten file keeps its own. */
      mode?: number;
    }
  | { path: string; delete: true; expect?: FileIdentity };

/** What a commit did to one path. */
export interface CommittedChange {
  relative: string;
  action: 'created' | 'overwritten' | 'deleted';
  bytes: number;
}

interface Planned {
  change: FileChange;
  walked: Walked;
  relative: string;
  absolute: string;
  existing?: Stats;
  /** Folders created for it, outermost first (for the rollback). */
  madeFolders: { parent: FileHandle; name: string }[];
  folder?: FileHandle;
  temp?: string;
  /** The name a deleted file was moved aside to. */
  aside?: string;
  done?: 'renamed' | 'moved-aside';
}

const fail = (message: string) => new ToolRuntimeError('tool_failed', message);
const errnoCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;
const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** Fixed-length hidden names, so a 255-byte file name still leaves room (NAME_MAX) for its temp file. */
const tempName = (kind: string) => `.tools-runtime-${kind}-${randomBytes(6).toString('hex')}`;

const lookAt = (folder: FileHandle, name: string) => lstat(procPath(folder.fd, name)).catch((error: unknown) => {
  if (errnoCode(error) === 'ENOENT') return undefined;
  throw error;
});

function checkExpectation(plan: Planned, now: Stats | undefined): void {
  const expect = plan.change.expect;
  if (now?.isDirectory()) throw fail(`${plan.relative} is a directory`);
  if (now && !now.isFile()) throw fail(`${plan.relative} is not a regular file; the file tools write regular files only`);
  if (expect === undefined) return;
  if (expect === 'absent') {
    if (now) throw fail(`${plan.relative} was created by something else meanwhile; read it and try again`);
  } else if (!now || !sameIdentity(expect, now)) {
    throw fail(`${plan.relative} was ${now ? 'replaced' : 'removed'} by something else since it was read; read it again and retry`);
  }
}

/**
 * Writes and deletes `changes` all or nothing, each through descriptors of its own folder:
 * 1. every path is walked and checked (the sandbox's rule, what the caller expected to find there)
 *    before anything changes: a refusal here leaves every file as it was;
 * 2. missing folders are made and each new content goes to a temp file in its target's folder;
 * 3. files to delete are moved aside, then each temp file is renamed over its target;
 * 4. the moved-aside files are removed.
 * If step 2 or 3 fails, what was done is undone in reverse, best effort: temp files removed, moved
 * files put back, overwritten files rewritten from `previous` (when given), created files and
 * folders removed. Once step 3 has started the signal is no longer obeyed, so a commit is never
 * cut in half by an abort.
 *
 * @throws ToolRuntimeError naming the path and the reason; the message says whether undoing failed.
 */
export async function commitChanges(options: {
  root: OpenRoot;
  changes: FileChange[];
  signal: AbortSignal;
  walk: (given: string) => Promise<Walked>;
  name: (walked: Walked) => Promise<{ relative: string; absolute: string }>;
  check: (walked: Walked, absolute: string, shown: string, leaf?: FileIdentity) => void;
  /** Called before each file's rename (step 3), with its relative path: tests use it to fail a commit halfway. */
  beforeRename?: (relative: string) => Promise<void> | void;
}): Promise<CommittedChange[]> {
  const plans: Planned[] = [];
  try {
    // 1. Look, change nothing.
    const seen = new Set<string>();
    for (const change of options.changes) {
      if (options.signal.aborted) throw new ToolRuntimeError('aborted', 'the write was aborted before it began');
      const walked = await options.walk(change.path);
      const plan: Planned = { change, walked, relative: '', absolute: '', madeFolders: [] };
      plans.push(plan);
      Object.assign(plan, await options.name(walked));
      if (walked.dangling) throw new ToolRuntimeError('invalid_arguments', `path ${JSON.stringify(change.path)} goes through a symbolic link whose target does not exist`);
      if (walked.rest.length === 0) throw fail(`${change.path} is the workspace folder itself`);
      if (seen.has(plan.absolute)) throw fail(`${plan.relative} is named twice in one change`);
      seen.add(plan.absolute);
      options.check(walked, plan.absolute, plan.relative);
      plan.existing = walked.rest.length === 1 ? await lookAt(walked.parent, walked.rest[0]!) : undefined;
      if (plan.existing) options.check(walked, plan.absolute, plan.relative, plan.existing);
      if ('delete' in change && !plan.existing) throw fail(`${plan.relative} does not exist, so it cannot be deleted`);
      checkExpectation(plan, plan.existing);
    }
    if (options.signal.aborted) throw new ToolRuntimeError('aborted', 'the write was aborted before it began');
    // 2. Folders and temp files: nothing visible changes but new folders.
    for (const plan of plans) {
      if ('delete' in plan.change) continue;
      let folder = plan.walked.parent;
      for (const name of plan.walked.rest.slice(0, -1)) {
        try {
          await mkdir(procPath(folder.fd, name), 0o777);
          plan.madeFolders.push({ parent: folder, name });
        } catch (error) {
          if (errnoCode(error) !== 'EEXIST') throw fail(`cannot make the folder for ${plan.relative}: ${(error as Error).message}`);
        }
        try {
          folder = await open(procPath(folder.fd, name), O_DIR);
        } catch {
          throw fail(`${plan.relative}: ${name} was replaced by something that is not a folder while it was written`);
        }
        plan.walked.stack.push(folder);
      }
      plan.folder = folder;
      plan.temp = tempName('new');
      const mode = plan.existing ? plan.existing.mode & 0o777 : (plan.change.mode ?? 0o666);
      const temp = await open(procPath(folder.fd, plan.temp), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
      try {
        await temp.writeFile(plan.change.content);
        // An overwritten file keeps its permissions exactly (the umask applied to the creation).
        if (plan.existing) await temp.chmod(mode);
      } finally {
        await temp.close();
      }
    }
    // 3. The visible part: deletions moved aside, then every rename.
    for (const plan of plans) {
      if (!('delete' in plan.change)) continue;
      const name = plan.walked.rest[0]!;
      checkExpectation(plan, await lookAt(plan.walked.parent, name));
      plan.aside = tempName('deleted');
      await rename(procPath(plan.walked.parent.fd, name), procPath(plan.walked.parent.fd, plan.aside));
      plan.done = 'moved-aside';
    }
    for (const plan of plans) {
      if ('delete' in plan.change) continue;
      const name = plan.walked.rest[plan.walked.rest.length - 1]!;
      await options.beforeRename?.(plan.relative);
      const now = await lookAt(plan.folder!, name);
      checkExpectation(plan, now);
      if (plan.existing && (!now || !sameIdentity(plan.existing, now))) throw fail(`${plan.relative} was replaced by something else while it was written; read it again and retry`);
      if (!plan.existing && now) throw fail(`${plan.relative} was created by something else while it was written; read it and try again`);
      await rename(procPath(plan.folder!.fd, plan.temp!), procPath(plan.folder!.fd, name));
      plan.done = 'renamed';
    }
    // 4. Only now is a deletion final.
    for (const plan of plans) {
      if (plan.aside) await unlink(procPath(plan.walked.parent.fd, plan.aside)).catch(() => undefined);
    }
    return plans.map((plan) => ({
      relative: plan.relative,
      action: 'delete' in plan.change ? 'deleted' : plan.existing ? 'overwritten' : 'created',
      bytes: 'delete' in plan.change ? 0 : Buffer.byteLength(plan.change.content),
    }));
  } catch (error) {
    const undone = await rollBack(plans);
    if (error instanceof ToolRuntimeError && undone.length === 0) throw error;
    const message = `${error instanceof Error ? error.message : String(error)}`;
    const note = undone.length === 0 ? 'nothing was changed' : `undoing the earlier steps failed for ${undone.join(', ')}: check them`;
    throw new ToolRuntimeError(error instanceof ToolRuntimeError ? error.code : 'tool_failed', `${message} (${note})`, { cause: error });
  } finally {
    for (const plan of plans) await plan.walked.release();
  }
}

/** Undoes what a failed commit did, newest first; returns the paths it could not put back. */
async function rollBack(plans: Planned[]): Promise<string[]> {
  const failed: string[] = [];
  for (const plan of [...plans].reverse()) {
    try {
      if (plan.done === 'renamed' && !('delete' in plan.change)) {
        const name = plan.walked.rest[plan.walked.rest.length - 1]!;
        if (!plan.existing) {
          await unlink(procPath(plan.folder!.fd, name));
        } else if (plan.change.previous !== undefined) {
          const back = tempName('restore');
          const handle = await open(procPath(plan.folder!.fd, back), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, plan.existing.mode & 0o777);
          try {
            await handle.writeFile(plan.change.previous);
            await handle.chmod(plan.existing.mode & 0o777);
          } finally {
            await handle.close();
          }
          await rename(procPath(plan.folder!.fd, back), procPath(plan.folder!.fd, name));
        } else {
          failed.push(plan.relative);
        }
      } else if (plan.done === 'moved-aside') {
        await rename(procPath(plan.walked.parent.fd, plan.aside!), procPath(plan.walked.parent.fd, plan.walked.rest[0]!));
      } else if (plan.temp && plan.folder) {
        await unlink(procPath(plan.folder.fd, plan.temp)).catch(() => undefined);
      }
      for (const made of [...plan.madeFolders].reverse()) await rmdir(procPath(made.parent.fd, made.name)).catch(() => undefined);
    } catch {
      failed.push(plan.relative);
    }
  }
  return failed;
}
