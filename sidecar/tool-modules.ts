import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { errorMessage, ToolRuntimeError } from '../src/errors.js';
import type { Logger } from '../src/logger.js';
import type { Catalogs, CategoryCreator } from './categories/category.js';

/**
 * One of a user's own tool categories: what a `--tools` module exports (as its default export, alone
 * or in an array) and what `startSidecar({ categories })` takes.
 */
export interface ToolCategory {
  /** Names the category in logs and errors: `[a-zA-Z0-9_-]`, 1 to 64 characters. */
  name: string;
  /**
   * Makes the category's tools for one turn (its context: the agent, the turn's kind, the sidecar's
   * config, the turn's signal). Return `[]` where the category has nothing for the turn. A throw
   * costs this category only: the turn goes on without it and the sidecar logs the error.
   */
  create: CategoryCreator;
  /**
   * Offer the category in workflow task turns too. Default false: a task's catalog is fixed (web,
   * Brain, submit_result) and a user's category joins it only when it says so.
   */
  workflowTask?: boolean;
}

/** A category with the module it came from (`--tools` value, or `startSidecar` for programmatic ones). */
export interface LoadedToolCategory extends ToolCategory {
  module: string;
}

const CATEGORY_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Checks a category and returns it, for type inference in a tool module:
 * `export default defineToolCategory({ name, create })`.
 *
 * @throws ToolRuntimeError `invalid_definition` on a bad name or a `create` that is not a function.
 */
export function defineToolCategory(category: ToolCategory): ToolCategory {
  const problem = categoryProblem(category);
  if (problem) throw new ToolRuntimeError('invalid_definition', problem);
  return category;
}

function categoryProblem(category: unknown): string | undefined {
  if (typeof category !== 'object' || category === null) return 'a tool category must be an object { name, create, workflowTask? }';
  const { name, create, workflowTask } = category as Partial<ToolCategory>;
  if (typeof name !== 'string' || !CATEGORY_NAME.test(name)) return `a tool category's name must match ^[a-zA-Z0-9_-]{1,64}$, got ${JSON.stringify(name)}`;
  if (typeof create !== 'function') return `tool category ${JSON.stringify(name)}: create must be a function (context) => tools`;
  if (workflowTask !== undefined && typeof workflowTask !== 'boolean') return `tool category ${JSON.stringify(name)}: workflowTask must be a boolean`;
  return undefined;
}

/**
 * Checks categories given programmatically (`module` names where they came from in errors).
 *
 * @throws ToolRuntimeError `invalid_definition` naming the module and what is wrong, or two
 *   categories of the same name.
 */
export function checkToolCategories(categories: readonly ToolCategory[], module: string): LoadedToolCategory[] {
  return categories.map((category) => {
    const problem = categoryProblem(category);
    if (problem) throw new ToolRuntimeError('invalid_definition', `${module}: ${problem}`);
    return { ...category, module };
  });
}

/**
 * Imports each `--tools` module and returns its categories, in the order given. A specifier that
 * starts with `.` or `/` (or `file:`) is a path resolved against `baseDir` (`INIT_CWD` under npm,
 * else the working directory); anything else is a package name, looked up in the `node_modules`
 * folders from `baseDir` upwards. A module's default export is one category or an array of them.
 *
 * @throws ToolRuntimeError `invalid_request` naming the module when it cannot be found or fails to
 *   load (its own error included), exports no categories, or repeats a category's name.
 */
export async function loadToolModules(specifiers: readonly string[], options: { baseDir: string }): Promise<LoadedToolCategory[]> {
  const loaded: LoadedToolCategory[] = [];
  for (const specifier of specifiers) {
    const fail = (message: string, cause?: unknown) =>
      new ToolRuntimeError('invalid_request', `--tools ${specifier}: ${message}`, cause === undefined ? undefined : { cause });
    let file: string | undefined;
    try {
      file = resolveToolModule(specifier, options.baseDir);
    } catch (error) {
      throw fail(errorMessage(error), error);
    }
    if (!file) throw fail(`cannot find the module (a path is resolved against ${options.baseDir}; a package name is looked up in node_modules from there)`);
    let namespace: { default?: unknown };
    try {
      namespace = (await import(pathToFileURL(file).href)) as { default?: unknown };
    } catch (error) {
      throw fail(`the module ${file} failed to load: ${errorMessage(error)}`, error);
    }
    const exported = namespace.default;
    if (exported === undefined) throw fail('the module has no default export: export default a tool category { name, create } or an array of them');
    const categories = Array.isArray(exported) ? exported : [exported];
    if (categories.length === 0) throw fail('the module exports an empty array of tool categories');
    for (const category of categories) {
      const problem = categoryProblem(category);
      if (problem) throw fail(problem);
      loaded.push({ ...(category as ToolCategory), module: specifier });
    }
  }
  checkUniqueNames(loaded);
  return loaded;
}

/** @throws ToolRuntimeError `invalid_request` when two categories share a name. */
export function checkUniqueNames(categories: readonly LoadedToolCategory[]): void {
  const seen = new Map<string, string>();
  for (const category of categories) {
    const earlier = seen.get(category.name);
    if (earlier !== undefined) {
      throw new ToolRuntimeError('invalid_request', `tool category ${JSON.stringify(category.name)} comes from both ${earlier} and ${category.module}`);
    }
    seen.set(category.name, category.module);
  }
}

/**
 * The catalogs with the users' categories after every built-in one, in the order given: text turns
 * take them all, workflow task turns those with `workflowTask: true`. Built-in tools keep their
 * places (a stable prefix of the tool list), users' tools come last. Each is isolated: a creator that throws, returns
 * something other than tools, or reuses a name costs its category only, logged with its module.
 */
export function withToolCategories<T extends Catalogs>(catalogs: T, categories: readonly LoadedToolCategory[], options: { logger: Logger }): T {
  if (categories.length === 0) return catalogs;
  const creator = (category: LoadedToolCategory): CategoryCreator =>
    Object.assign((context: Parameters<CategoryCreator>[0]) => category.create(context), {
      isolated: {
        onFailure(error: unknown) {
          options.logger.error('a tool category failed and is left out of this turn', {
            category: category.name,
            module: category.module,
            error: errorMessage(error),
          });
        },
      },
    });
  const text = categories.map(creator);
  const workflowTask = categories.filter((category) => category.workflowTask === true).map(creator);
  // The spread keeps the catalogs' own methods (close, warm): closures that use no `this`.
  return { ...catalogs, text: [...catalogs.text, ...text], workflowTask: [...catalogs.workflowTask, ...workflowTask] };
}

/**
 * The file `specifier` names, or undefined when there is none. A `file:` specifier is either a URL
 * (`file:///var/tmp/my%20tools/t.mjs`, escapes decoded) or, as npm writes them, a path after the
 * scheme (`file:./tools.mjs`, `file:../shared/tools.mjs`), resolved against `baseDir`.
 *
 * @throws Error naming the file and the fix when a `file:` URL is malformed or an installed
 *   package's package.json is not JSON.
 */
export function resolveToolModule(specifier: string, baseDir: string): string | undefined {
  if (specifier.startsWith('file:')) return fileIfExists(filePath(specifier, baseDir));
  if (specifier.startsWith('.') || isAbsolute(specifier)) return fileIfExists(resolve(baseDir, specifier));
  const parts = specifier.split('/');
  const nameLength = specifier.startsWith('@') ? 2 : 1;
  const name = parts.slice(0, nameLength).join('/');
  const subpath = parts.slice(nameLength).join('/');
  for (let dir = resolve(baseDir); ; dir = dirname(dir)) {
    const packageDir = join(dir, 'node_modules', name);
    if (existsSync(join(packageDir, 'package.json'))) return packageEntry(packageDir, subpath);
    if (dirname(dir) === dir) return undefined;
  }
}

function filePath(specifier: string, baseDir: string): string {
  const rest = specifier.slice('file:'.length);
  // `file:/abs` and `file:///abs` are URLs; `file:./x` and `file:x` are npm's relative form.
  if (rest.startsWith('/')) {
    try {
      return fileURLToPath(specifier);
    } catch (error) {
      throw new Error(`${specifier} is not a file URL this system takes (${errorMessage(error)}); give the path itself`);
    }
  }
  let decoded = rest;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    // a literal "%" in a relative path: take it as written
  }
  return resolve(baseDir, decoded);
}

function fileIfExists(path: string): string | undefined {
  try {
    return statSync(path).isFile() ? path : undefined;
  } catch {
    return undefined;
  }
}

type ExportTarget = string | { [condition: string]: ExportTarget } | null | undefined;

/** The entry of an installed package for `subpath` ('' for the package itself): `exports`, else `main`. */
function packageEntry(packageDir: string, subpath: string): string | undefined {
  const manifestPath = join(packageDir, 'package.json');
  let manifest: { exports?: ExportTarget | Record<string, ExportTarget>; main?: string };
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as typeof manifest;
  } catch (error) {
    throw new Error(`the package's ${manifestPath} cannot be read as JSON (${errorMessage(error)}): fix or reinstall the package`);
  }
  const key = subpath ? `./${subpath}` : '.';
  if (manifest.exports !== undefined && manifest.exports !== null) {
    const exportsMap = manifest.exports as Record<string, ExportTarget>;
    const hasSubpaths = typeof exportsMap === 'object' && Object.keys(exportsMap).some((entry) => entry.startsWith('.'));
    const target = hasSubpaths ? exportsMap[key] : key === '.' ? (manifest.exports as ExportTarget) : undefined;
    const path = pickCondition(target);
    return path ? fileIfExists(join(packageDir, path)) : undefined;
  }
  if (subpath) return fileIfExists(join(packageDir, subpath));
  return fileIfExists(join(packageDir, manifest.main ?? 'index.js'));
}

/** The target for an ES module import under Node: `import`, `node`, `default`, nested. */
function pickCondition(target: ExportTarget): string | undefined {
  if (typeof target === 'string') return target;
  if (!target) return undefined;
  for (const condition of ['import', 'node', 'default']) {
    const picked = pickCondition(target[condition]);
    if (picked) return picked;
  }
  return undefined;
}
