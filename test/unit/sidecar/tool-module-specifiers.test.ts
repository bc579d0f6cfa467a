import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadToolModules, resolveToolModule } from '../../../sidecar/tool-modules.js';

// Issue 36 item 5: `file:` specifiers with escapes or relative paths, and a broken package.json.
describe('--tools specifiers', () => {
  let dir: string;
  let module: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tool-specifiers-'));
    mkdirSync(join(dir, 'my tools'));
    module = join(dir, 'my tools', 't.mjs');
    writeFileSync(module, "export default { name: 'spaced', create: () => [] };\n");
    mkdirSync(join(dir, 'node_modules', 'broken'), { recursive: true });
    writeFileSync(join(dir, 'node_modules', 'broken', 'package.json'), '{ "name": "broken", ');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('decodes the escapes of a file: URL', () => {
    const url = pathToFileURL(module).href;
    expect(url).toContain('%20');
    expect(resolveToolModule(url, '/')).toBe(module);
  });

  it("takes npm's relative file: form against the base folder", () => {
    expect(resolveToolModule('file:./my tools/t.mjs', dir)).toBe(module);
    expect(resolveToolModule('file:my%20tools/t.mjs', dir)).toBe(module);
    expect(resolveToolModule('file:../x/t.mjs', join(dir, 'my tools'))).toBeUndefined();
  });

  it('loads a module named by a file: URL with escapes', async () => {
    const loaded = await loadToolModules([pathToFileURL(module).href], { baseDir: '/' });
    expect(loaded.map((category) => category.name)).toEqual(['spaced']);
  });

  it("names the module and the package.json when an installed package's manifest is not JSON", async () => {
    await expect(loadToolModules(['broken'], { baseDir: dir })).rejects.toThrow(/--tools broken: the package's .*node_modules\/broken\/package\.json cannot be read as JSON .*fix or reinstall/);
  });
});
