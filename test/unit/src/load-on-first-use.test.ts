import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importOnFirstUse, loadOnFirstUse } from '../../../src/load-on-first-use.js';
import { runningBuilt, runtimePath } from '../../../src/runtime-path.js';

describe('loadOnFirstUse', () => {
  it('loads the package on the first call and returns the same module afterwards', () => {
    const loadYaml = loadOnFirstUse<typeof import('yaml')>('yaml');
    const first = loadYaml();
    expect(first.parse('a: 1')).toEqual({ a: 1 });
    expect(loadYaml()).toBe(first);
  });

  it('throws on every call for a package that is not installed, so a later install still loads', () => {
    const load = loadOnFirstUse('no-such-package-for-tools-runtime');
    expect(() => load()).toThrow(/no-such-package-for-tools-runtime/);
    expect(() => load()).toThrow(/no-such-package-for-tools-runtime/);
  });
});

describe('runtimePath', () => {
  it('resolves from the project root when running from source', () => {
    expect(runningBuilt).toBe(false);
    expect(existsSync(runtimePath('proto/toolruntime/v1/sidecar.proto'))).toBe(true);
    expect(existsSync(runtimePath('controller/sample-workspace/README.md'))).toBe(true);
  });
});

describe('importOnFirstUse', () => {
  it('starts the load once and hands every caller the same promise; a failed load is tried again', async () => {
    let loads = 0;
    const load = importOnFirstUse(async () => {
      loads += 1;
      if (loads === 1) throw new Error('not yet');
      return { loads };
    });
    await expect(load()).rejects.toThrow('not yet');
    const [a, b] = await Promise.all([load(), load()]);
    expect(a).toBe(b);
    expect(loads).toBe(2);
  });
});
