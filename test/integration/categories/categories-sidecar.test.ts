// The categories through a real sidecar child process and the generated gRPC client.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ToolSidecarServiceClient,
  TurnKind,
  type AssembleToolsResponse,
  type TurnContext,
  type TurnResponse,
} from '../../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { makeTempDir } from '../../unit/sidecar/categories/tool-harness.js';
import { localTokenOptions } from '../sidecar/turn-driver.js';

const fixtures = fileURLToPath(new URL('../../fixtures/categories/', import.meta.url));
const resultSchemaJson = JSON.stringify({ type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false });

function context(overrides: Partial<TurnContext>): TurnContext {
  return { agentId: 'agent-cat', turnId: `t-${Math.random()}`, kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined, ...overrides };
}

/** Opens a Turn, sends the calls (each waits for the previous result), half-closes, returns every response. */
async function runTurn(client: ToolSidecarServiceClient, turn: TurnContext, calls: Array<[string, unknown]>): Promise<TurnResponse[]> {
  const stream = client.turn({ deadline: Date.now() + 25_000 });
  const responses: TurnResponse[] = [];
  let notify: (() => void) | undefined;
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  stream.on('data', (response: TurnResponse) => {
    responses.push(response);
    notify?.();
  });
  const waitFor = (predicate: () => boolean) =>
    new Promise<void>((resolve) => {
      notify = () => predicate() && resolve();
      notify();
    });
  stream.write({ request: { $case: 'open', value: { context: turn } } });
  await waitFor(() => responses.some((r) => r.event?.$case === 'toolSet'));
  for (const [index, [name, args]] of calls.entries()) {
    const callId = `c${index}`;
    stream.write({ request: { $case: 'call', value: { callId, name, namespace: '', argumentsJson: JSON.stringify(args), deadlineMs: 20_000, traceparent: '', tracestate: '' } } });
    await waitFor(() => responses.some((r) => r.callId === callId && r.event?.$case === 'result'));
  }
  stream.end();
  await ended;
  return responses;
}

const resultOf = (responses: TurnResponse[], callId: string) => {
  const event = responses.find((r) => r.callId === callId && r.event?.$case === 'result')?.event;
  if (event?.$case !== 'result') throw new Error(`no result for ${callId}`);
  return { ...event.value, text: event.value.content.map((part) => (part.part?.$case === 'text' ? part.part.value : '')).join('') };
};

describe('categories through a real sidecar', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  let sidecar: StartedSidecar;
  let client: ToolSidecarServiceClient;
  let site: Server;
  let siteBase: string;

  beforeAll(async () => {
    temp = await makeTempDir('categories-int');
    site = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<html><head><title>Local</title></head><body><h2>Served locally</h2></body></html>');
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteBase = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    sidecar = await startSidecar({
      args: ['--workspace', temp.dir, '--state-dir', path.join(temp.dir, '.state'), '--brain', path.join(fixtures, 'brain'), '--skills', path.join(fixtures, 'skills'), '--web-fetch', '--web-allow-private'],
    });
    client = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
  });
  afterAll(async () => {
    client?.close();
    await sidecar?.stop();
    await new Promise<void>((resolve) => site.close(() => resolve()));
    await temp.remove();
  });

  const assemble = (turn: TurnContext) =>
    new Promise<AssembleToolsResponse>((resolve, reject) => client.assembleTools({ context: turn }, (error, response) => (error ? reject(error) : resolve(response))));

  it('assembles both catalogs with the exact tool names', async () => {
    const text = await assemble(context({ canSpawnJobs: true, brainEnabled: true, enabledSkills: ['style-guide'] }));
    expect(text.tools.map((t) => t.name)).toEqual(['todo_write', 'todo_read', 'run_command', 'read_file', 'write_file', 'edit_file', 'apply_patch', 'list_files', 'start_command', 'write_session', 'read_session', 'list_sessions', 'kill_session', 'web_fetch']);
    expect(text.instructions).toContain('Commit messages say why');
    const task = await assemble(context({ kind: TurnKind.TURN_KIND_WORKFLOW_TASK, brainEnabled: true, resultSchemaJson, enabledSkills: ['style-guide'] }));
    expect(task.tools.map((t) => t.name)).toEqual(['web_fetch', 'recall', 'get_page', 'submit_result']);
    const submit = task.tools.find((t) => t.name === 'submit_result')!;
    expect(submit.strict).toBe(true);
    expect(JSON.parse(submit.parametersJson).properties.result).toEqual(JSON.parse(resultSchemaJson));
  });

  it('sends a result schema strict mode cannot represent non-strict, with the reason in strict_note', async () => {
    const open = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const task = await assemble(context({ kind: TurnKind.TURN_KIND_WORKFLOW_TASK, resultSchemaJson: JSON.stringify(open) }));
    const submit = task.tools.find((t) => t.name === 'submit_result')!;
    expect(submit.strict).toBe(false);
    expect(submit.strictNote).toMatch(/^submit_result is sent with strict: false because strict mode cannot represent result: an open object/);
  });

  it('runs computer and web tools in a text turn, streaming command output', async () => {
    const responses = await runTurn(client, context({}), [
      ['run_command', { command: 'printf "one\\ntwo\\n" > notes.txt; echo done' }],
      ['read_file', { path: 'notes.txt' }],
      ['web_fetch', { url: `${siteBase}/` }],
    ]);
    const run = resultOf(responses, 'c0');
    expect(run.text).toContain('exit code 0');
    expect(run.completedLabel).toMatch(/^Ran `printf .*` \(exit 0, \d+\.\d s\)$/);
    const output = responses.filter((r) => r.callId === 'c0' && r.event?.$case === 'presentation');
    expect(output.length).toBeGreaterThan(0);
    expect(JSON.stringify(output)).toContain('command.output');
    expect(resultOf(responses, 'c1').text).toContain('1\tone\n2\ttwo');
    expect(resultOf(responses, 'c1').completedLabel).toBe('Read notes.txt (2 lines)');
    expect(resultOf(responses, 'c2').text).toContain('## Served locally');
  });

  it('recalls from Brain and ends a workflow task turn with an accepted submit_result', async () => {
    const responses = await runTurn(client, context({ kind: TurnKind.TURN_KIND_WORKFLOW_TASK, brainEnabled: true, resultSchemaJson }), [
      ['recall', { query: 'analytical engine' }],
      ['submit_result', { result: { answer: 42 } }],
      ['submit_result', { result: { answer: 'Ada' } }],
    ]);
    expect(resultOf(responses, 'c0').text).toContain('people/ada.md');
    const rejected = resultOf(responses, 'c1');
    expect(rejected.terminateTurn).toBe(false);
    const accepted = resultOf(responses, 'c2');
    expect(accepted.terminateTurn).toBe(true);
    expect(JSON.parse(accepted.detailsJson)).toEqual({ accepted: true, result: { answer: 'Ada' } });
  });
});
