import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { runtimePath } from '../../../src/runtime-path.js';
import type { BrainWorkerData } from './brain-protocol.js';

/**
 * Starts the Brain's upkeep worker thread (`brain-worker.ts`) with `data`. Run from the build, the
 * worker is its own bundle, `dist/sidecar/brain-worker.js` (an entry point of .ci/build.mjs). Run from TypeScript sources (tsx, vitest),
 * a worker thread on Node 20 does not inherit the parent's loader hooks, so a two-line bootstrap
 * registers tsx in the worker first and then imports the entry.
 */
export function startBrainWorker(data: BrainWorkerData): Worker {
  const fromSources = import.meta.url.endsWith('.ts');
  if (!fromSources) return new Worker(runtimePath('sidecar/brain-worker.js'), { workerData: data });
  const entry = new URL('./brain-worker.ts', import.meta.url);
  // tsx's ESM API (its CommonJS build resolves its own files wrongly from an eval'd worker).
  const tsxApi = pathToFileURL(path.join(path.dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs'));
  const bootstrap = `import(${JSON.stringify(tsxApi.href)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData: data });
}
