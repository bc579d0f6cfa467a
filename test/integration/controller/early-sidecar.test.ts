// npm start spawns its sidecar before it loads the rest of the controller (startEarlySidecar), so the
// two start-ups overlap. The early child is the same one connectCliSidecar starts: a real sidecar
// (from the sources here, through tsx), adopted by the turn, stopped and cleaned up by close().
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createSidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import { startEarlySidecar } from '../../../controller/cli/start-early-sidecar.js';
import { descendantsOf, stillRunning, waitFor } from '../../fixtures/process-tree.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('startEarlySidecar', () => {
  it('starts nothing when the CLI will start no sidecar: --sidecar, --help, or arguments it refuses', () => {
    const signal = AbortSignal.timeout(60_000);
    const before = descendantsOf(process.pid).length;
    expect(startEarlySidecar({ argv: ['--sidecar', '127.0.0.1:1'], env: {}, signal })).toBeUndefined();
    expect(startEarlySidecar({ argv: ['--help'], env: {}, signal })).toBeUndefined();
    expect(startEarlySidecar({ argv: ['--tool-search', 'psychic'], env: {}, signal })).toBeUndefined();
    expect(startEarlySidecar({ argv: ['--console-token-file', 'x'], env: {}, signal })).toBeUndefined();
    expect(descendantsOf(process.pid).length).toBe(before);
  });

  it('spawns the sidecar at once over a copy of the sample workspace; the turn adopts it; close() stops it and removes the copy', async () => {
    const early = startEarlySidecar({ argv: ['--quiet'], env: {}, signal: AbortSignal.timeout(60_000) });
    expect(early).toBeDefined();
    // Spawned within the call, before any await: the child exists already.
    const children = descendantsOf(process.pid).filter((entry) => entry.command.includes('sidecar/main'));
    expect(children.length).toBeGreaterThan(0);

    const lines: string[] = [];
    const { address, token } = await early!.adopt((line) => lines.push(line));
    // The spawned sidecar wants the token generated for it: nobody else on the machine has it.
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // One line for the spawn; the sandbox's line may follow it already (on a machine without
    // bubblewrap the probe fails at once), and says what commands run under.
    expect(lines[0]).toMatch(/over /);
    expect(lines.slice(1).every((line) => /^(▶ )?(commands run sandboxed|sandbox unavailable|sandbox off)/.test(line)), lines.join('\n')).toBe(true);
    const workspace = /over (.+)$/.exec(lines[0]!)?.[1];
    expect(workspace && readdirSync(workspace).sort()).toContain('README.md');

    const stranger = createSidecarClient({ address });
    await expect(stranger.openTurn({ agentId: 'other', turnId: 'x1' }, { signal: AbortSignal.timeout(30_000) })).rejects.toThrow(/UNAUTHENTICATED|token|authorization/i);
    stranger.close();
    const client = createSidecarClient({ address, token: token! });
    try {
      const turn = await client.openTurn({ agentId: 'early', turnId: 'e1' }, { signal: AbortSignal.timeout(30_000) });
      const result = await turn.call({ callId: 'c1', name: 'read_file', argumentsJson: '{"path": "README.md"}' }).result;
      expect(JSON.stringify(result.content)).toContain('Tiny Notes');
      await turn.close();
    } finally {
      client.close();
    }

    await early!.close();
    await early!.close(); // idempotent
    expect(await waitFor(() => (stillRunning(children).length === 0 ? true : undefined), 15_000)).toBe(true);
    expect(existsSync(dirname(workspace!))).toBe(false);
  }, 90_000);
});

describe('the built controller entry', () => {
  it('loads only a few KB before it spawns the sidecar: no grpc-js, zod or openai in its static imports', () => {
    execFileSync(process.execPath, [join(root, '.ci/build.mjs'), '--if-stale'], { cwd: root, stdio: 'pipe', timeout: 180_000 });
    const seen = new Map<string, string>();
    const walk = (file: string) => {
      if (seen.has(file)) return;
      const text = readFileSync(file, 'utf8');
      seen.set(file, text);
      for (const match of text.matchAll(/(?:^|[;}\s])import\s*(?:[\w${},\s*]*from\s*)?"(\.\.?\/[^"]+)"/g)) walk(resolve(dirname(file), match[1]!));
    };
    walk(join(root, 'dist/controller/main.js'));
    const loaded = [...seen.values()].join('\n');
    expect(seen.size).toBeGreaterThan(1); // the walk follows the chunks
    expect(loaded).toContain('--exit-on-stdin-eof');
    // Marks of each package in the bundle: a CommonJS module's path key, a class name.
    for (const heavy of ['node_modules/@grpc/grpc-js/', '$ZodType', 'OpenAIError']) expect(loaded).not.toContain(heavy);
    // ...which the whole controller does load.
    const chunks = readdirSync(join(root, 'dist/chunks')).filter((name) => name.endsWith('.js'));
    const all = chunks.map((name) => readFileSync(join(root, 'dist/chunks', name), 'utf8')).join('\n');
    for (const heavy of ['node_modules/@grpc/grpc-js/', '$ZodType', 'OpenAIError']) expect(all).toContain(heavy);
    expect(loaded.length).toBeLessThan(64 * 1024);
  }, 200_000);
});
