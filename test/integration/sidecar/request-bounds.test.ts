import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolResult, ToolSidecarServiceClient, TurnKind, TurnResponse } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { localTokenOptions, openTurn, textOf } from './turn-driver.js';

// Requests with oversized fields, and tools whose results and events pass the 16 MiB message
// limit: every call still gets exactly one result and the stream ends OK.
const MESSAGE_LIMIT = 16 * 1024 * 1024;
let sidecar: StartedSidecar;
let client: ToolSidecarServiceClient;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-bounds-'));
  sidecar = await startSidecar({
    entry: 'test/fixtures/fault-sidecar.ts',
    args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'error'],
  });
  // The client takes messages up to the sidecar's limit (grpc-js defaults to 4 MiB).
  client = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    ...localTokenOptions(sidecar.address),
  });
});

afterAll(async () => {
  client?.close();
  expect(await sidecar?.stop()).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

const encodedSize = (result: ToolResult) => ToolResult.encode(result).finish().length;

describe('request fields are bounded on receipt', () => {
  it('answers a 9 MiB tool name with a short unknown_tool result, and the other calls keep theirs', async () => {
    const turn = await openTurn(client, 'agent-bounds');
    const slow = turn.call('slow', 'sleep', { ms: 300 });
    const huge = await turn.call('huge', 'n'.repeat(9 * 1024 * 1024), {});
    expect(huge.error?.code).toBe('unknown_tool');
    expect(huge.error!.message.length).toBeLessThan(1_000);
    expect(textOf(huge).length).toBeLessThan(1_000);
    const namespaced = await turn.call('huge-ns', 'lookup', { key: 'k' }, { namespace: 's'.repeat(2 * 1024 * 1024) });
    expect(namespaced.error?.code).toBe('unknown_tool');
    expect(namespaced.error!.message.length).toBeLessThan(1_000);
    expect((await slow).error).toBeUndefined();
    expect(textOf(await turn.call('after', 'noop', {}))).toBe('ok');
    expect((await turn.end()).code).toBe(grpc.status.OK);
  });

  it('refuses an oversized call_id with one result tagged with it, and cuts a long cancel reason', async () => {
    const turn = await openTurn(client, 'agent-bounds');
    const longId = `id-${'i'.repeat(1024 * 1024)}`;
    const refused = await turn.call(longId, 'noop', {});
    expect(refused.error?.code).toBe('invalid_arguments');
    expect(refused.error!.message).toMatch(/call_id is \d+ bytes/);
    expect(refused.error!.message.length).toBeLessThan(1_000);
    const sleeping = turn.call('cancel-me', 'sleep', { ms: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    turn.cancel('cancel-me', 'r'.repeat(4 * 1024 * 1024));
    const cancelled = await sleeping;
    expect(cancelled.error?.code).toBe('aborted');
    expect(cancelled.error!.message.length).toBeLessThan(2_000);
    expect((await turn.end()).code).toBe(grpc.status.OK);
    expect(turn.responses.filter((response) => response.callId === longId)).toHaveLength(1);
  });

  it('refuses an open whose context fields are over their bounds with INVALID_ARGUMENT', async () => {
    const stream = client.turn();
    const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    stream.on('error', () => {});
    stream.on('data', () => {});
    stream.write({
      request: {
        $case: 'open',
        value: { context: { agentId: 'a'.repeat(1024 * 1024), turnId: 't', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined } },
      },
    });
    const ended = await status;
    expect(ended.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(ended.details).toMatch(/agent_id is \d+ bytes/);
    expect(ended.details.length).toBeLessThan(1_000);
    const labels = Object.fromEntries(Array.from({ length: 100 }, (_, index) => [`k${index}`, 'v']));
    const assembled = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.assembleTools(
        { context: { agentId: 'a', turnId: 't', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels, controlPlane: false, approvalPolicy: undefined, sandbox: undefined } },
        (error) => resolve(error),
      ),
    );
    expect(assembled?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(assembled?.details).toMatch(/labels has 100 entries/);
  });
});

describe('no result or event passes the send limit', () => {
  it('cuts a result whose content and details together exceed 16 MiB, saying so, and the stream goes on', async () => {
    const turn = await openTurn(client, 'agent-bounds');
    const big = await turn.call('big', 'large_result', { parts: 200, chars: 100_000, details_chars: 12_000_000 });
    expect(encodedSize(big)).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(big.error).toBeUndefined();
    expect(textOf(big)).toMatch(/cut/);
    expect(big.detailsJson).toMatch(/cut/);
    expect(() => JSON.parse(big.detailsJson)).not.toThrow();
    expect(textOf(await turn.call('after', 'noop', {}))).toBe('ok');
    expect((await turn.end()).code).toBe(grpc.status.OK);
  });

  it('cuts a tool error message and a presentation event that exceed the limit', async () => {
    const turn = await openTurn(client, 'agent-bounds');
    const failed = await turn.call('error', 'large_result', { parts: 0, chars: 0, error_chars: 20_000_000 });
    expect(failed.error?.code).toBe('tool_failed');
    expect(encodedSize(failed)).toBeLessThan(1024 * 1024);
    const evented = await turn.call('event', 'large_result', { parts: 1, chars: 10, event_chars: 17_000_000 });
    expect(evented.error).toBeUndefined();
    const event = turn.record('event').events.find((item) => item?.$case === 'presentation');
    expect(event?.$case).toBe('presentation');
    if (event?.$case === 'presentation') {
      expect(TurnResponse.encode({ callId: 'event', event }).finish().length).toBeLessThanOrEqual(MESSAGE_LIMIT);
      expect(JSON.parse(event.value.payloadJson)).toMatchObject({ cut: expect.stringMatching(/bytes/) });
    }
    expect((await turn.end()).code).toBe(grpc.status.OK);
  });
});
