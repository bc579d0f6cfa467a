import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AgentToolResult, PresentationEvent, WorkerAgentTool } from '../../../../src/index.js';
import { defaultCommandEnvAllowList, type SidecarConfig } from '../../../../sidecar/sidecar-config.js';
import { defaultSidecarLimits } from '../../../../sidecar/sidecar-limits.js';
import type { CategoryContext, TurnContext } from '../../../../sidecar/categories/category.js';
import { testSandboxSettings } from '../../../fixtures/test-sandbox.js';

/** A temporary folder, removed by `remove()`. */
export async function makeTempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), `${prefix}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A SidecarConfig for tests: the given workspace and state folder, default limits, and the sandbox
 * of test-sandbox.ts (the default where bubblewrap works, `off` where not) unless `sandbox` is given.
 */
export function testConfig(options: Partial<SidecarConfig> & { workspace: string; stateDir: string }): SidecarConfig {
  return { commandEnv: {}, commandEnvAllowList: defaultCommandEnvAllowList, limits: defaultSidecarLimits, sandbox: testSandboxSettings(options.stateDir), ...options };
}

/** A turn context for tests. */
export function testTurn(overrides: Partial<TurnContext> = {}): TurnContext {
  return {
    agentId: 'agent-1',
    turnId: 'turn-1',
    kind: 'text',
    enabledSkills: [],
    canSpawnJobs: false,
    brainEnabled: false,
    resultSchemaJson: '',
    labels: {},
    ...overrides,
  };
}

export function testContext(config: SidecarConfig, turn: Partial<TurnContext> = {}): CategoryContext {
  return { config, turn: testTurn(turn), signal: new AbortController().signal };
}

/** Finds a tool by name or fails. */
export function toolNamed(tools: WorkerAgentTool[], name: string): WorkerAgentTool {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(', ')}`);
  return tool;
}

/** What one direct call of a tool produced: the result and the events it emitted. */
export interface CallRecord {
  result: AgentToolResult;
  events: PresentationEvent[];
  text: string;
}

/**
 * Parses `params` with the tool's Zod schema (as the validator would) and runs execute with a
 * signal; records the emitted events.
 */
export async function callTool(tool: WorkerAgentTool, params: unknown, signal: AbortSignal = AbortSignal.timeout(20_000)): Promise<CallRecord> {
  const parsed = tool.schema ? tool.schema.parse(params) : params;
  const events: PresentationEvent[] = [];
  const result = await tool.execute(parsed, { signal, callId: 'call-1', emit: async (event) => {
    events.push(event);
  } });
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return { result, events, text };
}
