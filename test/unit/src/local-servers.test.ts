import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findLocalServer, findLocalServerToken, listLocalServers, localServersDir, normalizeServerAddress, registerLocalServer } from '../../../src/local-servers.js';

const dir = mkdtempSync(join(tmpdir(), 'local-servers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the runtime folder of local servers', () => {
  it('is $TOOLS_RUNTIME_RUNTIME_DIR, else $XDG_RUNTIME_DIR/tools-runtime, else under ~/.local/state', () => {
    expect(localServersDir({ TOOLS_RUNTIME_RUNTIME_DIR: '/x/run', XDG_RUNTIME_DIR: '/run/user/7' })).toBe('/x/run');
    expect(localServersDir({ XDG_RUNTIME_DIR: dir })).toBe(join(dir, 'tools-runtime'));
    expect(localServersDir({ HOME: '/home/ada' })).toBe('/home/ada/.local/state/tools-runtime/runtime');
    // A session's variable whose folder is gone (a container, sudo) falls back.
    expect(localServersDir({ XDG_RUNTIME_DIR: join(dir, 'gone'), HOME: '/home/ada' })).toBe('/home/ada/.local/state/tools-runtime/runtime');
  });

  it('spells one address one way: loopback names, brackets, dns: and relative unix paths', () => {
    expect(normalizeServerAddress('localhost:7401')).toBe(normalizeServerAddress('127.0.0.1:7401'));
    expect(normalizeServerAddress('[::1]:7401')).toBe(normalizeServerAddress('127.0.0.1:7401'));
    expect(normalizeServerAddress('dns:127.0.0.1:7401')).toBe('loopback:7401');
    expect(normalizeServerAddress('127.0.0.1:7401')).not.toBe(normalizeServerAddress('127.0.0.1:7402'));
    expect(normalizeServerAddress('10.0.0.5:7000')).toBe('10.0.0.5:7000');
    expect(normalizeServerAddress('unix:/run/s.sock')).toBe('unix:/run/s.sock');
  });

  it('writes an entry and a generated token 0600 in a 0700 folder, finds them by address, and removes them', () => {
    const env = { TOOLS_RUNTIME_RUNTIME_DIR: join(dir, 'a') };
    const registration = registerLocalServer({ kind: 'sidecar', address: '127.0.0.1:7999', token: 'secret-token', workspace: '/w' }, env);
    expect(statSync(join(dir, 'a')).mode & 0o777).toBe(0o700);
    expect(statSync(registration.tokenFile!).mode & 0o777).toBe(0o600);
    expect(statSync(registration.entryFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(registration.entryFile, 'utf8')).not.toContain('secret-token');
    expect(findLocalServerToken('localhost:7999', { env })).toBe('secret-token');
    expect(findLocalServer('127.0.0.1:7999', { kind: 'control-plane', env })).toBeUndefined();
    expect(listLocalServers({ env })).toEqual([expect.objectContaining({ kind: 'sidecar', address: '127.0.0.1:7999', pid: process.pid, workspace: '/w' })]);
    registration.remove();
    expect(existsSync(registration.tokenFile!)).toBe(false);
    expect(findLocalServerToken('127.0.0.1:7999', { env })).toBeUndefined();
  });

  it('skips and deletes the entry of a process that is gone', () => {
    const folder = join(dir, 'b');
    mkdirSync(folder, { mode: 0o700 });
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(join(folder, `sidecar-${gone}-00.json`), JSON.stringify({ kind: 'sidecar', address: '127.0.0.1:1', pid: gone, startedAt: new Date().toISOString() }));
    expect(listLocalServers({ env: { TOOLS_RUNTIME_RUNTIME_DIR: folder } })).toEqual([]);
    expect(existsSync(join(folder, `sidecar-${gone}-00.json`))).toBe(false);
  });

  it('refuses a folder that is a symlink (someone else could collect the tokens)', () => {
    mkdirSync(join(dir, 'elsewhere'));
    symlinkSync(join(dir, 'elsewhere'), join(dir, 'link'));
    expect(() => registerLocalServer({ kind: 'sidecar', address: '127.0.0.1:1', token: 't' }, { TOOLS_RUNTIME_RUNTIME_DIR: join(dir, 'link') })).toThrow(/symlink is refused/);
  });
});
