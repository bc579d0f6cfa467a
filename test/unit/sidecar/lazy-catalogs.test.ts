import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger, type Logger } from '../../../src/index.js';
import { assembleToolSet } from '../../../sidecar/categories/category.js';
import { createLazyCatalogs } from '../../../sidecar/lazy-catalogs.js';
import { createCatalogs } from '../../../sidecar/tool-sets.js';
import { makeTempDir, testConfig, testContext } from './categories/tool-harness.js';

describe('createLazyCatalogs', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    temp = await makeTempDir('lazy-catalogs');
  });
  afterAll(async () => {
    await temp.remove();
  });
  const config = () => testConfig({ workspace: temp.dir, stateDir: path.join(temp.dir, 'state') });

  it('loads nothing until warm() or a turn, then assembles exactly what the real catalogs do, for both kinds', async () => {
    let loads = 0;
    const lazy = createLazyCatalogs({
      load: async () => {
        loads += 1;
        return createCatalogs;
      },
      config: config(),
      logger: silentLogger,
    });
    expect(loads).toBe(0);
    lazy.warm();
    expect(loads).toBe(1);
    const real = createCatalogs(config(), { logger: silentLogger });
    try {
      for (const turn of [{ kind: 'text' as const }, { kind: 'text' as const, controlPlane: true }, { kind: 'workflow_task' as const, resultSchemaJson: '{"type":"object"}' }]) {
        const got = await assembleToolSet(lazy, testContext(config(), turn));
        const want = await assembleToolSet(real, testContext(config(), turn));
        expect(got.tools.map((tool) => tool.name)).toEqual(want.tools.map((tool) => tool.name));
        expect(got.tools.length).toBeGreaterThan(0);
        expect(got.instructions).toBe(want.instructions);
      }
      expect(loads).toBe(1);
    } finally {
      await real.close();
      await lazy.close?.();
    }
  });

  it("with warm 'when-something-starts', warm() loads only for a Brain index or mounted MCP servers; a turn loads either way", async () => {
    const make = (extra: Partial<ReturnType<typeof config>>) => {
      let loads = 0;
      const lazy = createLazyCatalogs({
        load: async () => {
          loads += 1;
          return () => ({ text: [], workflowTask: [] });
        },
        config: { ...config(), ...extra },
        logger: silentLogger,
        warm: 'when-something-starts',
      });
      lazy.warm();
      return { lazy, loads: () => loads };
    };
    const plain = make({});
    expect(plain.loads()).toBe(0);
    await assembleToolSet(plain.lazy, testContext(config()));
    expect(plain.loads()).toBe(1);
    expect(make({ brainDir: temp.dir }).loads()).toBe(1);
    expect(make({ mcpServers: [{ name: 'm', description: 'd', trusted: false, timeoutMs: 1_000, transport: 'stdio', command: 'true', args: [], env: {} }] }).loads()).toBe(1);
    expect(make({ mcpServers: [] }).loads()).toBe(0);
  });

  it('fails a turn whose load fails, logs a failed warm-up, and tries again on the next turn', async () => {
    const errors: string[] = [];
    const logger: Logger = { ...silentLogger, error: (message, fields) => errors.push(`${message} ${JSON.stringify(fields)}`) };
    let attempt = 0;
    const lazy = createLazyCatalogs({
      load: async () => {
        attempt += 1;
        if (attempt <= 2) throw new Error(`disk on fire (${attempt})`);
        return createCatalogs;
      },
      config: config(),
      logger,
    });
    lazy.warm();
    for (let waited = 0; errors.length === 0 && waited < 10_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(errors.join('\n')).toContain('disk on fire (1)');
    await expect(assembleToolSet(lazy, testContext(config()))).rejects.toThrow(/disk on fire \(2\)/);
    const set = await assembleToolSet(lazy, testContext(config()));
    expect(set.tools.map((tool) => tool.name)).toContain('read_file');
    await lazy.close?.();
  });

  it("stops waiting for a load when the turn's signal aborts, and the load still serves the next turn", async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const lazy = createLazyCatalogs({
      load: async () => {
        await gate;
        return createCatalogs;
      },
      config: config(),
      logger: silentLogger,
    });
    const turn = new AbortController();
    const context = { ...testContext(config()), signal: turn.signal };
    const waiting = assembleToolSet(lazy, context);
    turn.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'aborted' });
    release();
    const set = await assembleToolSet(lazy, testContext(config()));
    expect(set.tools.map((tool) => tool.name)).toContain('read_file');
    await lazy.close?.();
  });

  it('close() closes what was made; a load still in flight makes nothing, and close() does not wait for it', async () => {
    let made = 0;
    let closed = 0;
    let loads = 0;
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const make = (wait: boolean) =>
      createLazyCatalogs({
        load: async () => {
          loads += 1;
          if (wait) await gate;
          return () => {
            made += 1;
            return { text: [], workflowTask: [], close: () => void (closed += 1) };
          };
        },
        config: config(),
        logger: silentLogger,
      });
    await make(false).close?.();
    expect([loads, made, closed]).toEqual([0, 0, 0]);

    const loaded = make(false);
    await assembleToolSet(loaded, testContext(config()));
    await loaded.close?.();
    expect([loads, made, closed]).toEqual([1, 1, 1]);

    const inFlight = make(true);
    inFlight.warm();
    await inFlight.close?.(); // returns while the load still waits at the gate
    release();
    await expect(assembleToolSet(inFlight, testContext(config()))).rejects.toMatchObject({ code: 'sidecar_unavailable' });
    expect([loads, made, closed]).toEqual([2, 1, 1]);
  });
});
