import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolSidecarServiceClient, TurnKind } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar } from '../../fixtures/start-sidecar.js';
import { findLocalServer } from '../../../src/local-servers.js';
import { bearer, createClient, openTurn, textOf } from './turn-driver.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const entry = 'test/fixtures/fixture-sidecar.ts';
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-security-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = () => ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'warn'];

function assemble(client: ToolSidecarServiceClient): Promise<number> {
  return new Promise((resolve, reject) =>
    client.assembleTools({ context: { agentId: 'a', turnId: 't', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined } }, (error, response) =>
      error ? reject(error) : resolve(response.tools.length),
    ),
  );
}

/** Runs the CLI expecting it to exit before it listens; returns the exit code and stderr. */
async function runToExit(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(`${root}node_modules/.bin/tsx`, [`${root}${entry}`, ...args], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}


/** Polls `check` every 10 ms; fails naming `what` when it is still false after `timeoutMs`. */
async function waitUntil(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('sidecar security and lifecycle', () => {
  it('with a token, refuses RPCs without it or with a wrong one (health included) and serves the right one', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 's3cret-token\n');
    const sidecar = await startSidecar({ entry, args: [...base(), '--token-file', tokenFile] });
    try {
      const none = createClient(sidecar.address, null);
      await expect(assemble(none)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      const wrong = createClient(sidecar.address, 'not-the-token');
      await expect(assemble(wrong)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: 'the bearer token is wrong' });
      const health = new grpc.Client(sidecar.address, grpc.credentials.createInsecure());
      const healthStatus = await new Promise<grpc.StatusObject>((resolve) => {
        const call = health.makeUnaryRequest('/grpc.health.v1.Health/Check', () => Buffer.alloc(0), (value: Buffer) => value, Buffer.alloc(0), () => {});
        call.on('status', resolve);
      });
      expect(healthStatus.code).toBe(grpc.status.UNAUTHENTICATED);
      const good = createClient(sidecar.address, 's3cret-token');
      expect(await assemble(good)).toBeGreaterThan(5);
      const turn = await openTurn(good, 'agent-token');
      expect(textOf(await turn.call('c1', 'noop', {}))).toBe('ok');
      await turn.end();
      for (const client of [none, wrong, health, good]) client.close();
    } finally {
      expect(await sidecar.stop('SIGTERM')).toBe(0);
    }
  });

  it('started by hand without --token-file, generates a token, writes it 0600 to the runtime folder, requires it, and removes it on exit', async () => {
    const runtimeDir = join(dir, 'runtime');
    const socket = join(dir, 'generated.sock');
    const env = { TOOLS_RUNTIME_RUNTIME_DIR: runtimeDir };
    const sidecar = await startSidecar({ entry, args: [...base(), '--listen', `unix:${socket}`], env });
    try {
      expect(sidecar.tokenFile?.startsWith(`${runtimeDir}/sidecar-`)).toBe(true);
      expect(statSync(sidecar.tokenFile!).mode & 0o777).toBe(0o600);
      expect(statSync(runtimeDir).mode & 0o777).toBe(0o700);
      // The socket is this user's alone, whatever the umask; the token still applies on it.
      expect(statSync(socket).mode & 0o777).toBe(0o600);
      expect(sidecar.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const listed = findLocalServer(`unix:${socket}`, { kind: 'sidecar', env });
      expect(listed).toMatchObject({ address: `unix:${socket}`, tokenFile: sidecar.tokenFile, workspace: dir });
      const none = createClient(sidecar.address, null);
      await expect(assemble(none)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      const good = createClient(sidecar.address, sidecar.token!);
      expect(await assemble(good)).toBeGreaterThan(5);
      for (const client of [none, good]) client.close();
    } finally {
      expect(await sidecar.stop('SIGTERM')).toBe(0);
    }
    expect(existsSync(sidecar.tokenFile!)).toBe(false);
    expect(findLocalServer(`unix:${socket}`, { env })).toBeUndefined();
  });

  it('refuses a non-loopback listen address without a token, and unknown flags, with exit 2', async () => {
    const [open, unknown] = await Promise.all([runToExit([...base(), '--listen', '0.0.0.0:0']), runToExit([...base(), '--no-such-flag'])]);
    expect(open.code).toBe(2);
    expect(open.stderr).toContain('refusing to listen on 0.0.0.0:0 without --token-file');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown option --no-such-flag');
  });

  it('serves on a unix socket and exits 0 on SIGTERM while a call runs', async () => {
    const socket = join(dir, 'sidecar.sock');
    const sidecar = await startSidecar({ entry, args: [...base(), '--listen', `unix:${socket}`, '--drain-grace-ms', '200'] });
    expect(sidecar.address).toBe(`unix:${socket}`);
    const client = createClient(sidecar.address);
    const turn = await openTurn(client, 'agent-unix');
    expect(textOf(await turn.call('c1', 'echo', { via: 'unix' }))).toBe('{"via":"unix"}');
    turn.stream.on('error', () => {});
    const running = turn.call('c2', 'sleep', { ms: 60_000 });
    await waitUntil(() => turn.record('c2').events.length > 0, 'the first event of call c2 (the long sleep started)');
    const code = await sidecar.stop('SIGTERM');
    expect(code).toBe(0);
    // The drain aborted the long call and still sent its result before ending the stream.
    expect((await running).error?.code).toBe('aborted');
    expect((await turn.status).code).toBe(grpc.status.UNAVAILABLE);
    client.close();
  });

  it('serves TLS with a self-signed certificate', async () => {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
    const sidecar = await startSidecar({ entry, args: [...base(), '--tls-cert', cert, '--tls-key', key] });
    try {
      const secure = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createSsl(readFileSync(cert)), {
        'grpc.ssl_target_name_override': 'localhost',
        interceptors: [bearer(sidecar.token!)],
      });
      expect(await assemble(secure)).toBeGreaterThan(5);
      secure.close();
      const plain = createClient(sidecar.address);
      await expect(assemble(plain)).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
      plain.close();
    } finally {
      expect(await sidecar.stop()).toBe(0);
    }
  });
});

