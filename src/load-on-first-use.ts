import { createRequire } from 'node:module';

// Resolved from here: the project's node_modules, from the sources and from dist/ alike.
const require = createRequire(import.meta.url);

/**
 * Returns a getter that loads the CommonJS package `specifier` on its first call and returns the
 * same module afterwards. For what a process may never need (ajv, yaml, turndown, reflection), so
 * start-up neither reads nor compiles it; the build leaves such packages in node_modules.
 *
 * @throws Error from `require` on the first call when the package cannot be loaded (and again on
 *   later calls: a failure is not cached).
 */
export function loadOnFirstUse<T>(specifier: string): () => T {
  let loaded: { module: T } | undefined;
  return () => (loaded ??= { module: require(specifier) as T }).module;
}

/**
 * Returns a getter that starts `load` (an `import()` of what a process may never need) on its first
 * call and hands every caller the same promise. A failed load is not kept: the next call tries again.
 */
export function importOnFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
