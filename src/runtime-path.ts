import { fileURLToPath } from 'node:url';

/**
 * Whether this code runs from the build (`dist/`, plain JavaScript made by `npm run build`) rather
 * than from the TypeScript sources through tsx (development and tests).
 */
export const runningBuilt = !import.meta.url.endsWith('.ts');

/**
 * The absolute path of `relative` (`proto/`, `controller/sample-workspace/`, `sidecar/main.js`)
 * from the project's root when running from source, or from `dist/` when running built. Both hold:
 * this file is one folder below the root, and the build puts every bundle and chunk one folder
 * below `dist/` (.ci/build.mjs), next to the copied `proto/` and sample workspace.
 */
export function runtimePath(relative: string): string {
  return fileURLToPath(new URL(`../${relative}`, import.meta.url));
}
