import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { createControlPlaneServer } from '../../../../../../controller/control-plane/grpc/control-plane-server.js';
import { MAX_AGENTS, readAgentsFile } from '../../../../../../controller/control-plane/cli/serve/read-agents-file.js';
import { parseServeOptions, SERVE_USAGE } from '../../../../../../controller/control-plane/cli/serve/serve-options.js';
import { silentLogger } from '../../../../../../src/index.js';
import { controlPlaneClient } from '../../../../../fixtures/control-plane-client.js';

const dir = mkdtempSync(join(tmpdir(), 'serve-setup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('readAgentsFile', () => {
  it('maps agent ids to a running sidecar or a workspace, paths read from the file\'s folder', async () => {
    const agents = await readAgentsFile(file('agents.json', JSON.stringify({ 'agent-a': { address: '127.0.0.1:7000', tokenFile: 'a.token' }, 'agent-b': { workspace: 'ws' } })));
    expect([...agents]).toEqual([
      ['agent-a', { kind: 'address', address: '127.0.0.1:7000', tokenFile: join(dir, 'a.token'), turnFeatures: {} }],
      ['agent-b', { kind: 'workspace', workspace: join(dir, 'ws'), features: {}, turnFeatures: {} }],
    ]);
  });

  it("gives a started sidecar what its flags would (tools, network, web, Brain, skills, hidden paths) and each agent's turns their Brain, skills, instructions and TLS CA", async () => {
    writeFileSync(join(dir, 'prompt.md'), 'You are the research agent.\n');
    const agents = await readAgentsFile(
      file(
        'features.json',
        JSON.stringify({
          started: { workspace: 'ws', tools: ['./my-tools.js', 'some-package'], network: 'allow:example.com', webFetch: true, brain: 'notes', skills: 'skills', hide: ['secret'], enabledSkills: ['pdf'], instructionsFile: 'prompt.md' },
          running: { address: '127.0.0.1:7001', caFile: 'ca.pem', enableBrain: true, instructions: 'Be brief.' },
        }),
      ),
    );
    expect(agents.get('started')).toEqual({
      kind: 'workspace',
      workspace: join(dir, 'ws'),
      features: { tools: [join(dir, 'my-tools.js'), 'some-package'], network: 'allow:example.com', webFetch: true, brain: join(dir, 'notes'), skills: join(dir, 'skills'), hide: [join(dir, 'secret')] },
      turnFeatures: { brainEnabled: true, enabledSkills: ['pdf'] },
      instructions: 'You are the research agent.\n',
    });
    expect(agents.get('running')).toEqual({ kind: 'address', address: '127.0.0.1:7001', caFile: join(dir, 'ca.pem'), turnFeatures: { brainEnabled: true }, instructions: 'Be brief.' });
    await expect(readAgentsFile(file('tools-remote.json', '{"a": {"address": "x:1", "tools": ["./t.js"]}}'))).rejects.toThrow(/wrong at a/);
    await expect(readAgentsFile(file('both-instructions.json', '{"a": {"workspace": "w", "instructions": "x", "instructionsFile": "y"}}'))).rejects.toThrow(/both instructions and instructionsFile/);
    await expect(readAgentsFile(file('network.json', '{"a": {"workspace": "w", "network": "wide"}}'))).rejects.toThrow(/network is "off", "on" or "allow:HOST,..."/);
  });

  it('passes a workspace agent\'s MCP servers file on, resolved from the file\'s folder', async () => {
    const agents = await readAgentsFile(file('mcp-agents.json', JSON.stringify({ 'agent-m': { workspace: 'ws', mcpServers: 'mcp.json' } })));
    expect(agents.get('agent-m')).toEqual({ kind: 'workspace', workspace: join(dir, 'ws'), mcpServers: join(dir, 'mcp.json'), features: {}, turnFeatures: {} });
  });

  it('passes a workspace agent\'s limits on as its sidecar\'s --limits, and refuses what is not one', async () => {
    const agents = await readAgentsFile(file('limits-agents.json', JSON.stringify({ small: { workspace: 'ws', limits: 'memory=1G,pids=256' }, free: { workspace: 'ws', limits: 'off' } })));
    expect(agents.get('small')).toMatchObject({ kind: 'workspace', workspace: join(dir, 'ws'), limits: 'memory=1G,pids=256' });
    expect(agents.get('free')).toMatchObject({ limits: 'off' });
    await expect(readAgentsFile(file('bad-limits.json', '{"a": {"workspace": "w", "limits": "memory=1G; rm -rf /"}}'))).rejects.toThrow(/limits is "off" or "memory=SIZE/);
  });

  it('takes a user (UID or UID:GID) for a workspace agent, with a stateDir that user can write', async () => {
    const agents = await readAgentsFile(file('users.json', JSON.stringify({ a: { workspace: 'wa', stateDir: 'sa', user: '1001' }, b: { workspace: 'wb', stateDir: 'sb', user: '1002:50' } })));
    expect(agents.get('a')).toEqual({ kind: 'workspace', workspace: join(dir, 'wa'), stateDir: join(dir, 'sa'), user: { uid: 1001, gid: 1001 }, features: {}, turnFeatures: {} });
    expect(agents.get('b')).toMatchObject({ user: { uid: 1002, gid: 50 } });
    await expect(readAgentsFile(file('no-state.json', '{"a": {"workspace": "w", "user": "1001"}}'))).rejects.toThrow(/gives agent "a" a user but no stateDir/);
    await expect(readAgentsFile(file('name.json', '{"a": {"workspace": "w", "stateDir": "s", "user": "alice"}}'))).rejects.toThrow(/user is "UID" or "UID:GID"/);
    await expect(readAgentsFile(file('remote-user.json', '{"a": {"address": "x:1", "user": "1001"}}'))).rejects.toThrow(/wrong at a/);
  });

  it('refuses a bad file in one line that says where and what is expected', async () => {
    await expect(readAgentsFile(join(dir, 'missing.json'))).rejects.toThrow(/cannot read the agents file/);
    await expect(readAgentsFile(file('bad.json', '{"a": '))).rejects.toThrow(/is not JSON/);
    await expect(readAgentsFile(file('empty.json', '{}'))).rejects.toThrow(/names no agent/);
    await expect(readAgentsFile(file('both.json', '{"a": {"address": "x:1", "workspace": "w"}}'))).rejects.toThrow(/wrong at a: .*Expected \{"AGENT_ID"/);
    await expect(readAgentsFile(file('id.json', '{"bad id!": {"workspace": "w"}}'))).rejects.toThrow(/agent id is 1-128 letters/);
  });

  it('takes a fleet of 1,000 agents and refuses one more than MAX_AGENTS', async () => {
    const fleet = (n: number) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`agent-${i}`, { address: `127.0.0.1:${7000 + (i % 5)}` }])));
    expect(MAX_AGENTS).toBe(10_000);
    expect((await readAgentsFile(file('fleet.json', fleet(1_000)))).size).toBe(1_000);
    expect((await readAgentsFile(file('largest.json', fleet(MAX_AGENTS)))).size).toBe(MAX_AGENTS);
    await expect(readAgentsFile(file('over.json', fleet(MAX_AGENTS + 1)))).rejects.toThrow(/names 10001 agents; at most 10000/);
  });
});

describe('parseServeOptions', () => {
  it('reads its own flags and the model flags of npm start, and refuses the rest', () => {
    const options = parseServeOptions(['--agents', 'a.json', '--listen', '127.0.0.1:0', '--grace-ms=250', '--base-url', 'http://127.0.0.1:9/v1', '--no-stream'], {});
    expect(options).toMatchObject({ agentsFile: 'a.json', listen: '127.0.0.1:0', graceMs: 250, maxRunningJobsPerAgent: 2, model: { embedded: false, baseURL: 'http://127.0.0.1:9/v1', stream: false } });
    expect(parseServeOptions(['--agents', 'a.json'], {}).model.embedded).toBe(true);
    expect(() => parseServeOptions([], {})).toThrow(/--agents FILE is required/);
    expect(() => parseServeOptions(['--agents', 'a.json', '--prompt', 'hi'], {})).toThrow(/serve does not take "--prompt"/);
    expect(() => parseServeOptions(['--agents', 'a.json', '--grace-ms', 'soon'], {})).toThrow(/--grace-ms must be an integer/);
    expect(() => parseServeOptions(['--agents'], {})).toThrow(/--agents needs a value/);
  });

  it("--help lists every key of the agents file's entries", () => {
    for (const key of ['address', 'tokenFile', 'caFile', 'enableBrain', 'workspace', 'stateDir', 'sandbox', 'user', 'mcpServers', 'tools', 'network', 'webFetch', 'brain', 'skills', 'hide', 'enabledSkills', 'instructions', 'instructionsFile']) {
      expect(SERVE_USAGE).toContain(`"${key}"`);
    }
  });
});

describe('createControlPlaneServer', () => {
  it('cannot be created without a token, and with one listens anywhere', async () => {
    const answer = async () => ({ reply: undefined });
    expect(() => createControlPlaneServer({ answer, logger: silentLogger, token: '' })).toThrow(/needs a token/);
    const guarded = createControlPlaneServer({ answer, logger: silentLogger, token: 't' });
    expect(await guarded.listen('0.0.0.0:0')).toMatch(/^0\.0\.0\.0:\d+$/);
    await guarded.close({ graceMs: 0 });
  });

  it('makes a unix socket private to this user (mode 0600) and still asks for the token on it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-socket-'));
    const path = join(dir, 'control.sock');
    const server = createControlPlaneServer({ answer: async () => ({ reply: { $case: 'listJobs', value: { jobs: [] } } }), logger: silentLogger, token: 'sock-token' });
    try {
      expect(await server.listen(`unix:${path}`)).toBe(`unix:${path}`);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const anonymous = controlPlaneClient(`unix:${path}`);
      await expect(anonymous.listJobs({ agentId: 'a' })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      anonymous.close();
      const operator = controlPlaneClient(`unix:${path}`, 'sock-token');
      expect(await operator.listJobs({ agentId: 'a' })).toEqual({ jobs: [] });
      operator.close();
    } finally {
      await server.close({ graceMs: 0 });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
