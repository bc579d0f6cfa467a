import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { userFolder } from '../../../src/user-folder.js';

const dir = mkdtempSync(join(tmpdir(), 'user-folder-'));
const pkg = join(dir, 'pkg');
const sub = join(dir, 'pkg', 'sub');
mkdirSync(sub, { recursive: true });
writeFileSync(join(pkg, 'package.json'), '{}');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('userFolder', () => {
  it('is INIT_CWD when npm runs the script from its package root', () => {
    expect(userFolder({ INIT_CWD: sub, npm_package_json: join(pkg, 'package.json') }, pkg)).toBe(sub);
  });

  it('is the working directory without npm, or when npm variables were only inherited', () => {
    expect(userFolder({}, sub)).toBe(sub);
    // A test under `npm test` that spawns a child in another folder: the child keeps its folder.
    expect(userFolder({ INIT_CWD: pkg, npm_package_json: join(pkg, 'package.json') }, dir)).toBe(dir);
  });

  it('is the working directory when INIT_CWD is gone', () => {
    expect(userFolder({ INIT_CWD: join(dir, 'removed'), npm_package_json: join(pkg, 'package.json') }, pkg)).toBe(pkg);
  });
});
