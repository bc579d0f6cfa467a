import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { defaultSidecarLimits } from '../../../../sidecar/sidecar-limits.js';
import { createMcpTurnServer } from '../../../../sidecar/mcp/mcp-turn-server.js';
import type { Catalogs } from '../../../../sidecar/categories/category.js';
import { defineWorkerTool, type Logger } from '../../../../src/index.js';
import { createFixtureCatalogs } from '../../../fixtures/fixture-categories.js';

// The SDK's client and the sidecar's MCP turn server in one process, over the SDK's in-memory pair.
function recordingLogger(lines: string[]): Logger {
  const log = (message: string) => void lines.push(message);
  return { debug: log, info: log, warn: log, error: log };
}

async function connect(options: { rotateAfterCalls?: number; lines: string[]; catalogs?: Catalogs }) {
  const turn = createMcpTurnServer({
    catalogs: options.catalogs ?? createFixtureCatalogs(),
    config: { workspace: '/tmp', stateDir: '/tmp/mcp-turn-state', commandEnv: {}, commandEnvAllowList: [], limits: defaultSidecarLimits },
    logger: recordingLogger(options.lines),
    agentId: 'agent',
    approvalPolicy: { mode: 'none', toolNames: [] },
    label: 'unit',
    ...(options.rotateAfterCalls ? { rotateAfterCalls: options.rotateAfterCalls } : {}),
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'unit', version: '1' });
  await Promise.all([turn.server.connect(serverSide), client.connect(clientSide)]);
  return { client, turn };
}

describe('createMcpTurnServer', () => {
  it('renews its TurnSession after rotateAfterCalls calls, when none runs, and every call still answers', async () => {
    const lines: string[] = [];
    const { client, turn } = await connect({ rotateAfterCalls: 3, lines });
    const answers: string[] = [];
    for (let index = 0; index < 7; index++) {
      const result = (await client.callTool({ name: 'echo', arguments: { index } })) as CallToolResult;
      answers.push(result.content[0]?.type === 'text' ? result.content[0].text : '');
    }
    expect(answers).toEqual(Array.from({ length: 7 }, (_, index) => JSON.stringify({ index })));
    expect(lines.filter((line) => line === 'mcp turn session renewed')).toHaveLength(2);
    turn.close();
    await client.close();
  });

  it('lists a namespaced tool as namespace.name and calls it by that name', async () => {
    const { client, turn } = await connect({ lines: [] });
    const { tools } = await client.listTools();
    const namespaced = tools.find((tool) => tool.name.includes('.'));
    expect(namespaced).toBeDefined();
    const result = (await client.callTool({ name: namespaced!.name, arguments: { key: 'a' } })) as CallToolResult;
    expect(result.content.length).toBeGreaterThan(0);
    expect(JSON.stringify(result)).not.toContain('unknown_tool');
    turn.close();
    await client.close();
  });

  it('serves a declared outputSchema, with the json part as structuredContent (the SDK client checks it)', async () => {
    const weather = defineWorkerTool({
      name: 'weather',
      description: 'The weather of a city.',
      jsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      outputSchema: { type: 'object', properties: { celsius: { type: 'number' } }, required: ['celsius'] },
      isReadOnly: true,
      async execute() {
        return { content: [{ type: 'text', text: 'mild' }, { type: 'json', value: { celsius: 18 } }] };
      },
    });
    const { client, turn } = await connect({ lines: [], catalogs: { text: [() => [weather]], workflowTask: [] } });
    const { tools } = await client.listTools();
    expect(tools[0]).toMatchObject({ name: 'weather', outputSchema: { type: 'object', required: ['celsius'] }, annotations: { readOnlyHint: true, destructiveHint: false } });
    const result = (await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } })) as CallToolResult;
    expect(result.structuredContent).toEqual({ celsius: 18 });
    expect(result.content).toEqual([{ type: 'text', text: 'mild' }, { type: 'text', text: '{"celsius":18}' }]);
    turn.close();
    await client.close();
  });
});
