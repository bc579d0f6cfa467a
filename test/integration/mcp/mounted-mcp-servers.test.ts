import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger, type WorkerAgentTool } from '../../../src/index.js';
import type { CategoryContext, TurnKind } from '../../../sidecar/categories/category.js';
import { assembleToolSet } from '../../../sidecar/categories/category.js';
import { createMcpServersState, createMcpServerTools, type McpServersState } from '../../../sidecar/categories/mcp-servers.js';
import type { McpServerSpec } from '../../../sidecar/categories/mcp/mcp-servers-file.js';
import type { SidecarConfig } from '../../../sidecar/sidecar-config.js';
import { defaultSidecarLimits } from '../../../sidecar/sidecar-limits.js';
import { createCatalogs } from '../../../sidecar/tool-sets.js';
import { createTurnSession } from '../../../sidecar/turn/turn-session.js';
import type { CallResult, TurnEvent } from '../../../sidecar/turn/turn-event.js';
import { liveProcesses, waitFor } from '../../fixtures/process-tree.js';
import { bwrapWorks, testSandboxSettings } from '../../fixtures/test-sandbox.js';

// Mounted MCP servers against @modelcontextprotocol/server-everything (a real child process, over
// stdio and over Streamable HTTP) and a fixture server of our own (hang, exit, list_changed). Calls
// go through a real TurnSession, the path a Turn call takes. Stdio servers start through the
// sandbox's startProcess: under workspace-write where bubblewrap works, off where it does not.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const everything = `${root}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
const fixtureServer = `${root}test/fixtures/mcp/fixture-mcp-server.ts`;
const dir = mkdtempSync(join(tmpdir(), 'mounted-mcp-'));
const states: McpServersState[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  await Promise.all(states.map((state) => state.close()));
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

const config = (mcpServers: McpServerSpec[]): SidecarConfig => ({
  workspace: dir,
  stateDir: join(dir, 'state'),
  commandEnv: {},
  commandEnvAllowList: ['PATH', 'HOME'],
  limits: { ...defaultSidecarLimits, defaultCallDeadlineMs: 60_000 },
  sandbox: testSandboxSettings(join(dir, 'state')),
  mcpServers,
});
const base = { description: 'test server', trusted: false, timeoutMs: 5_000 };
const stdioSpec = (name: string, args: string[], extra: Partial<McpServerSpec> = {}): McpServerSpec =>
  ({ ...base, name, transport: 'stdio', command: process.execPath, args, env: {}, ...extra }) as McpServerSpec;

function mount(specs: McpServerSpec[]): McpServersState {
  const state = createMcpServersState(config(specs), { logger: silentLogger, timings: { backoffMs: 200, maxBackoffMs: 1_000, connectTimeoutMs: 30_000 } });
  state.start();
  states.push(state);
  return state;
}

const context = (specs: McpServerSpec[], kind: TurnKind = 'text'): CategoryContext => ({
  turn: {
    agentId: 'a',
    turnId: 't',
    kind,
    enabledSkills: [],
    canSpawnJobs: false,
    brainEnabled: false,
    resultSchemaJson: kind === 'workflow_task' ? '{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}' : '',
    labels: {},
  },
  config: config(specs),
  signal: new AbortController().signal,
});

/** One turn over `tools`: `call` resolves a call's result and the events it had. */
function turnOver(tools: WorkerAgentTool[]) {
  const session = createTurnSession({ tools, limits: config([]).limits, logger: silentLogger });
  const waiting = new Map<string, { events: TurnEvent[]; resolve(value: { result: CallResult; events: TurnEvent[] }): void }>();
  const order: string[] = [];
  void (async () => {
    for await (const event of session.events) {
      const entry = waiting.get(event.callId);
      entry?.events.push(event);
      if (event.type === 'result') {
        order.push(event.callId);
        entry?.resolve({ result: event.result, events: entry.events });
      }
    }
  })();
  let next = 0;
  return {
    session,
    order,
    call(namespace: string, name: string, args: unknown, onEvent?: (event: TurnEvent, callId: string) => void) {
      const callId = `c${++next}`;
      return {
        callId,
        done: new Promise<{ result: CallResult; events: TurnEvent[] }>((resolve) => {
          const events: TurnEvent[] = [];
          if (onEvent) events.push = (...items: TurnEvent[]) => (items.forEach((item) => onEvent(item, callId)), Array.prototype.push.apply(events, items));
          waiting.set(callId, { events, resolve });
          session.call({ callId, name, namespace, argumentsJson: JSON.stringify(args), deadlineMs: 0 });
        }),
      };
    },
  };
}

const textOf = (result: CallResult) => result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startEverythingHttp(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [everything, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not listen: ${stderr}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (/listening on port/i.test(stderr)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return child;
}

for (const transport of ['stdio', 'http'] as const) {
  describe(`server-everything mounted over ${transport}`, () => {
    let spec: McpServerSpec;
    let state: McpServersState;
    let tools: WorkerAgentTool[];
    let httpChild: ChildProcess | undefined;
    let port = 0;

    it('lists its tools as one deferred namespace, destructive because the server is not trusted', async () => {
      if (transport === 'stdio') spec = stdioSpec('everything', [everything, 'stdio']);
      else {
        port = await freePort();
        httpChild = await startEverythingHttp(port);
        spec = { ...base, name: 'everything', transport: 'http', url: `http://127.0.0.1:${port}/mcp`, headers: {} };
      }
      state = mount([spec]);
      tools = await createMcpServerTools(context([spec]), state, 30_000);
      const echo = tools.find((tool) => tool.name === 'echo');
      expect(echo).toBeDefined();
      expect(tools.every((tool) => tool.namespace === 'everything' && tool.deferLoading)).toBe(true);
      // get-structured-content says readOnlyHint: true; an untrusted server's word does not count.
      const structured = tools.find((tool) => tool.name === 'get-structured-content')!;
      expect(structured.isDestructive).toBe(true);
      expect(structured.isReadOnly).toBe(false);
      expect(structured.outputSchema).toMatchObject({ type: 'object' });
      // A stdio server starts through the sandbox's startProcess: bubblewrap in front where it works.
      if (transport === 'stdio' && bwrapWorks()) {
        expect(liveProcesses().some((entry) => /^\S*bwrap /.test(entry.command) && entry.command.includes('server-everything'))).toBe(true);
      }
    }, 60_000);

    it('calls a tool and returns structuredContent as a json part', async () => {
      const turn = turnOver(tools);
      const echo = await turn.call('everything', 'echo', { message: 'hi there' }).done;
      expect(textOf(echo.result)).toContain('hi there');
      const structured = await turn.call('everything', 'get-structured-content', { location: 'Chicago' }).done;
      expect(structured.result.error).toBeUndefined();
      expect(structured.result.content).toContainEqual({ type: 'json', value: expect.objectContaining({ temperature: expect.any(Number), humidity: expect.any(Number) }) });
      const bad = await turn.call('everything', 'get-sum', { a: 'one' }).done;
      expect(bad.result.error?.code).toBe('invalid_arguments');
    }, 60_000);

    it('turns progress into presentation events', async () => {
      const turn = turnOver(tools);
      const { result, events } = await turn.call('everything', 'trigger-long-running-operation', { duration: 0.6, steps: 3 }).done;
      expect(result.error).toBeUndefined();
      const progress = events.filter((event) => event.type === 'presentation' && event.event.kind === 'mcp.progress');
      // The SDK client handles a notification a microtask after it arrives and a response at once,
      // so the last progress can lose the race with the result: the first ones are certain.
      const values = progress.map((event) => (event as { event: { payload: { progress: number; total: number } } }).event.payload);
      expect(values.slice(0, 2)).toEqual([expect.objectContaining({ progress: 1, total: 3 }), expect.objectContaining({ progress: 2, total: 3 })]);
    }, 60_000);

    it('forwards a cancel: the call ends aborted and the server keeps serving', async () => {
      const turn = turnOver(tools);
      let cancelled = false;
      const call = turn.call('everything', 'trigger-long-running-operation', { duration: 60, steps: 120 }, (event, callId) => {
        if (event.type === 'presentation' && !cancelled) {
          cancelled = true;
          turn.session.cancel(callId, 'test');
        }
      });
      const { result } = await call.done;
      expect(result.error?.code).toBe('aborted');
      expect(textOf((await turn.call('everything', 'echo', { message: 'still here' }).done).result)).toContain('still here');
    }, 60_000);

    it('answers a clear error when the server is killed mid-call, and comes back', async () => {
      const turn = turnOver(tools);
      const call = turn.call('everything', 'trigger-long-running-operation', { duration: 60, steps: 120 }, () => undefined);
      if (transport === 'stdio') {
        // The node process itself (under bubblewrap its parent is the sandbox, not this process).
        const server = await waitFor(() => liveProcesses().find((entry) => entry.command.startsWith(`${process.execPath} ${everything}`) && entry.command.endsWith('stdio')), 10_000);
        expect(server).toBeDefined();
        await new Promise((resolve) => setTimeout(resolve, 300));
        process.kill(server!.pid, 'SIGKILL');
      } else {
        await new Promise((resolve) => setTimeout(resolve, 300));
        httpChild!.kill('SIGKILL');
      }
      const { result } = await call.done;
      expect(result.error?.code).toBe('tool_failed');
      expect(result.error?.message).toContain('everything');
      const down = await turn.call('everything', 'echo', { message: 'x' }).done;
      expect(down.result.error?.code).toBe('tool_failed');
      if (transport === 'http') httpChild = await startEverythingHttp(port);
      let answer: CallResult | undefined;
      for (let attempt = 0; attempt < 60 && !answer; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const { result: again } = await turn.call('everything', 'echo', { message: 'back again' }).done;
        if (!again.error) answer = again;
      }
      expect(answer && textOf(answer)).toContain('back again');
    }, 90_000);
  });
}

describe('mounted servers in the catalogs', () => {
  const spec = stdioSpec('fixture', [`${root}node_modules/tsx/dist/cli.mjs`, fixtureServer], { timeoutMs: 1_500 });
  let state: McpServersState;

  it('a hung server answers a clear error at its timeout without holding back the other calls', async () => {
    state = mount([spec]);
    const tools = await createMcpServerTools(context([spec]), state, 30_000);
    const turn = turnOver(tools);
    const hung = turn.call('fixture', 'hang', {});
    const quick = turn.call('fixture', 'noop', {});
    expect(textOf((await quick.done).result)).toBe('ok');
    const { result } = await hung.done;
    expect(result.error?.code).toBe('tool_failed');
    expect(result.error?.message).toContain('did not answer within 1500 ms');
    expect(turn.order.indexOf(quick.callId)).toBeLessThan(turn.order.indexOf(hung.callId));
  }, 60_000);

  it('reflects notifications/tools/list_changed at the next assembly', async () => {
    let tools: WorkerAgentTool[] = [];
    // The hang of the test before stopped the server: wait for its restart.
    for (let attempt = 0; attempt < 120 && !(state.connections[0]!.up && tools.some((tool) => tool.name === 'add_tool')); attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250));
      tools = await createMcpServerTools(context([spec]), state, 30_000);
    }
    expect(tools.map((tool) => tool.name)).not.toContain('added');
    const turn = turnOver(tools);
    expect(textOf((await turn.call('fixture', 'add_tool', {}).done).result)).toBe('added');
    let later: WorkerAgentTool[] = [];
    for (let attempt = 0; attempt < 40 && !later.some((tool) => tool.name === 'added'); attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250));
      later = await createMcpServerTools(context([spec]), state, 5_000);
    }
    expect(later.map((tool) => tool.name)).toContain('added');
  }, 60_000);

  it('trusts annotations only from a trusted server', async () => {
    const trusted = { ...spec, name: 'trusted_fixture', trusted: true };
    const tools = await createMcpServerTools(context([trusted]), mount([trusted]), 30_000);
    expect(tools.find((tool) => tool.name === 'noop')).toMatchObject({ isReadOnly: true, isDestructive: false });
    expect(tools.find((tool) => tool.name === 'hang')).toMatchObject({ isReadOnly: false, isDestructive: true });
  }, 60_000);

  it('joins text turns of the real catalogs only, never workflow task turns', async () => {
    const catalogs = createCatalogs(config([spec]), { logger: silentLogger });
    try {
      // The catalog waits 3 s at most for a server still starting (tsx, a loaded machine): ask again.
      let text = await assembleToolSet(catalogs, context([spec], 'text'));
      for (let attempt = 0; attempt < 60 && !text.tools.some((tool) => tool.namespace === 'fixture'); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        text = await assembleToolSet(catalogs, context([spec], 'text'));
      }
      expect(text.tools.some((tool) => tool.namespace === 'fixture' && tool.deferLoading)).toBe(true);
      const task = await assembleToolSet(catalogs, context([spec], 'workflow_task'));
      expect(task.tools.some((tool) => tool.namespace === 'fixture')).toBe(false);
    } finally {
      await catalogs.close();
    }
  }, 60_000);
});
