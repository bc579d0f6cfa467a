// Generated control tokens as files: where they go, their modes, and how a local client finds them.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  controlTokenPath,
  findControlToken,
  generateControlToken,
  removeTokenFile,
  writeTokenFile,
} from '../../../../../controller/control-plane/grpc/control-token.js';
import { sidecarHideArgs } from '../../../../../controller/sidecar-client/spawn-sidecar.js';

const dir = mkdtempSync(join(tmpdir(), 'control-token-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('control tokens', () => {
  it('are 32 random bytes, different each time, safe in a URL fragment', () => {
    const tokens = new Set(Array.from({ length: 50 }, generateControlToken));
    expect(tokens.size).toBe(50);
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('live at one file per endpoint under the data folder', () => {
    expect(controlTokenPath({ dataDir: '/d', kind: 'control-plane', address: '127.0.0.1:7400' })).toBe('/d/tokens/control-plane-127.0.0.1_7400.token');
    expect(controlTokenPath({ dataDir: '/d', kind: 'console', address: '[::1]:7401' })).toBe('/d/tokens/console-___1__7401.token');
    expect(controlTokenPath({ dataDir: '/d', kind: 'control-plane', address: 'unix:/run/x/../c.sock' })).toBe('/d/tokens/control-plane-unix__run_x_.._c.sock.token');
  });

  it('are written 0600 in a 0700 folder (a loose folder of ours narrowed), found by a client, removed only while still theirs', async () => {
    const dataDir = join(dir, 'data');
    mkdirSync(join(dataDir, 'tokens'), { recursive: true, mode: 0o755 });
    chmodSync(join(dataDir, 'tokens'), 0o755);
    const path = controlTokenPath({ dataDir, kind: 'control-plane', address: '127.0.0.1:7400' });
    const token = generateControlToken();
    await writeTokenFile(path, token);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'tokens')).mode & 0o777).toBe(0o700);
    expect(readFileSync(path, 'utf8')).toBe(`${token}\n`);
    expect(await findControlToken({ dataDir, kind: 'control-plane', address: '127.0.0.1:7400' })).toBe(token);
    await expect(findControlToken({ dataDir, kind: 'control-plane', address: '127.0.0.1:7999' })).rejects.toThrow(/no token for 127\.0\.0\.1:7999: .*--data-dir DIR.*--token-file FILE/);
    // --token-file wins over the data folder.
    const own = join(dir, 'own.token');
    writeFileSync(own, 'operator-token\nsecond line ignored\n');
    expect(await findControlToken({ tokenFile: own, dataDir, kind: 'control-plane', address: '127.0.0.1:7400' })).toBe('operator-token');
    // A newer server on the same address replaced the file: the older one's exit leaves it alone.
    const newer = generateControlToken();
    await writeTokenFile(path, newer);
    await removeTokenFile(path, token);
    expect(existsSync(path)).toBe(true);
    await removeTokenFile(path, newer);
    expect(existsSync(path)).toBe(false);
  });

  it('are not written through a symlinked folder (fails closed, naming the fix)', async () => {
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const dataDir = join(dir, 'linked');
    mkdirSync(dataDir);
    symlinkSync(elsewhere, join(dataDir, 'tokens'));
    await expect(writeTokenFile(controlTokenPath({ dataDir, kind: 'console', address: '127.0.0.1:1' }), 't')).rejects.toThrow(/not a folder.*--token-file FILE/);
  });
});

describe('sidecarHideArgs (the data folder and token files, hidden from the model by the sandbox)', () => {
  it('passes --hide once for each path', () => {
    expect(sidecarHideArgs(['/data', '/data/tokens/x.token', '', '/data'])).toEqual(['--hide', '/data', '--hide', '/data/tokens/x.token']);
    expect(sidecarHideArgs([])).toEqual([]);
  });
});
