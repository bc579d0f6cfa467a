import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TurnRequest, TurnResponse } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { localTokenOptions, openRequest } from './turn-driver.js';

// A client that sends raw bytes as Turn requests: open, one valid call and one frame that is not a
// TurnRequest, written in the same tick. Every stream must end with INVALID_ARGUMENT, whatever the
// bytes, and never leave the client waiting for a status.
let sidecar: StartedSidecar;
let client: grpc.Client;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-frames-'));
  sidecar = await startSidecar({
    entry: 'test/fixtures/fixture-sidecar.ts',
    args: ['--workspace', dir, '--state-dir', join(dir, 'state'), '--log-level', 'error'],
  });
  client = new grpc.Client(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
});

afterAll(async () => {
  client?.close();
  expect(await sidecar?.stop()).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

const encode = (request: TurnRequest) => Buffer.from(TurnRequest.encode(request).finish());
const callFrame = (callId: string) =>
  encode({ request: { $case: 'call', value: { callId, name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent: '', tracestate: '' } } });

/** Sends `frames` at once on a raw Turn stream; resolves the status and the responses before it. */
function exchange(frames: Buffer[], options: { timeoutMs?: number; halfClose?: boolean } = {}): Promise<{ status: grpc.StatusObject; responses: TurnResponse[] }> {
  const deadline = new Date(Date.now() + (options.timeoutMs ?? 15_000));
  const call = client.makeBidiStreamRequest(
    '/toolruntime.v1.ToolSidecarService/Turn',
    (value: Buffer) => value,
    (bytes: Buffer) => TurnResponse.decode(bytes),
    new grpc.Metadata(),
    { deadline },
  );
  const responses: TurnResponse[] = [];
  call.on('data', (response: TurnResponse) => responses.push(response));
  call.on('error', () => {});
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  for (const frame of frames) call.write(frame);
  if (options.halfClose) call.end();
  return status.then((value) => ({ status: value, responses }));
}

const garbage: Array<[string, Buffer]> = [
  ['a length-delimited field longer than the frame', Buffer.from([0x12, 0xff, 0xff, 0xff, 0x0f, 0x01])],
  ['a truncated varint', Buffer.from([0x08, 0xff, 0xff, 0xff])],
  ['an invalid wire type', Buffer.from([0x0f, 0x01, 0x02])],
  ['a call whose fields are garbage', Buffer.concat([Buffer.from([0x12, 0x04]), Buffer.from([0x0a, 0x10, 0x61, 0x62])])],
];

describe('undecodable Turn frames', () => {
  for (const [what, bytes] of garbage) {
    it(`ends the stream with INVALID_ARGUMENT for ${what}, sent with open and a valid call`, async () => {
      for (let attempt = 0; attempt < 10; attempt++) {
        const { status } = await exchange([encode(openRequest('agent-frames')), callFrame(`c${attempt}`), bytes]);
        expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
        expect(status.details).toMatch(/not a valid TurnRequest/);
      }
    });
  }

  it('ends the stream with INVALID_ARGUMENT when the garbage is the first frame', async () => {
    const { status, responses } = await exchange([Buffer.from([0xff, 0xff, 0xff])]);
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(responses).toEqual([]);
  });

  it('ends with INVALID_ARGUMENT after results were sent, and the sidecar keeps serving', async () => {
    const call = client.makeBidiStreamRequest(
      '/toolruntime.v1.ToolSidecarService/Turn',
      (value: Buffer) => value,
      (bytes: Buffer) => TurnResponse.decode(bytes),
      new grpc.Metadata(),
      { deadline: new Date(Date.now() + 15_000) },
    );
    call.on('error', () => {});
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    const result = new Promise<TurnResponse>((resolve) =>
      call.on('data', (response: TurnResponse) => {
        if (response.event?.$case === 'result') resolve(response);
      }),
    );
    call.write(encode(openRequest('agent-frames')));
    call.write(callFrame('before'));
    expect((await result).callId).toBe('before');
    call.write(Buffer.from([0x1a, 0x05, 0x0a]));
    expect((await status).code).toBe(grpc.status.INVALID_ARGUMENT);
    const next = await exchange([encode(openRequest('agent-frames')), callFrame('after')], { halfClose: true });
    expect(next.status.code).toBe(grpc.status.OK);
    const { responses } = next;
    expect(responses.some((response) => response.callId === 'after' && response.event?.$case === 'result')).toBe(true);
  }, 40_000);
});
