// grpc.health.v1 is served from code generated from gRPC's health.proto and reflection is loaded on
// its first request: both must still behave as generic clients (grpcurl, load balancers) expect.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testSandboxMode } from '../../fixtures/test-sandbox.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { localTokenOptions } from './turn-driver.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
// gRPC's reflection.proto, as the project keeps it (proto/grpc/reflection/).
const reflectionProtoRoot = fileURLToPath(new URL('../../../proto/', import.meta.url));

type AnyClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;
type Message = Record<string, any>;

function clientFor(file: string, includeDirs: string[], service: string[], address: string): AnyClient {
  const options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs };
  let node: unknown = grpc.loadPackageDefinition(protoLoader.loadSync(file, options));
  for (const part of service) node = (node as Record<string, unknown>)[part];
  return new (node as new (address: string, credentials: grpc.ChannelCredentials, options: grpc.ClientOptions) => AnyClient)(address, grpc.credentials.createInsecure(), localTokenOptions(address));
}

/** Collects a server stream's messages until it ends or fails; `next(n)` waits (bounded) for the n-th. */
function collect(stream: grpc.ClientReadableStream<Message>) {
  const messages: Message[] = [];
  let waiters: Array<() => void> = [];
  let ended = false;
  const wake = () => {
    for (const waiter of waiters) waiter();
    waiters = [];
  };
  stream.on('data', (message: Message) => {
    messages.push(message);
    wake();
  });
  stream.on('error', () => ((ended = true), wake()));
  stream.on('end', () => ((ended = true), wake()));
  return {
    messages,
    async next(count: number): Promise<Message[]> {
      const deadline = Date.now() + 15_000;
      while (messages.length < count && !ended && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 500);
        });
      }
      return messages;
    },
  };
}

let sidecar: StartedSidecar;
let dir: string;
let health: AnyClient;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-health-'));
  sidecar = await startSidecar({ args: ['--workspace', dir, '--state-dir', join(dir, 'state')] });
  health = clientFor('grpc/health/v1/health.proto', [join(root, 'proto')], ['grpc', 'health', 'v1', 'Health'], sidecar.address);
});
afterAll(async () => {
  health?.close();
  await sidecar?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const check = (service: string) =>
  new Promise<Message>((resolve, reject) => health.Check!({ service }, (error: Error | null, value: Message) => (error ? reject(error) : resolve(value))));

/** Polls `check` (async) until it gives a value, at most `ms`. */
async function waitFor<T>(check: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined || Date.now() > end) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('grpc.health.v1 and server reflection', () => {
  it('Check answers the server and the sidecar service, and NOT_FOUND for an unknown one', async () => {
    expect((await check('')).status).toBe('SERVING');
    expect((await check('toolruntime.v1.ToolSidecarService')).status).toBe('SERVING');
    await expect(check('no.such.Service')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it('List returns every status (the sandbox\'s once its start-up probe passed, where it runs sandboxed)', async () => {
    const list = () => new Promise<Message>((resolve, reject) => health.List!({}, (error: Error | null, value: Message) => (error ? reject(error) : resolve(value))));
    const sandboxed = testSandboxMode() !== 'off';
    const statuses = await waitFor(async () => {
      const { statuses } = await list();
      return !sandboxed || statuses['toolruntime.v1.Sandbox']?.status === 'SERVING' ? statuses : undefined;
    }, 10_000);
    expect(statuses).toEqual({
      '': { status: 'SERVING' },
      'toolruntime.v1.ToolSidecarService': { status: 'SERVING' },
      ...(sandboxed ? { 'toolruntime.v1.Sandbox': { status: 'SERVING' } } : {}),
    });
  });

  it('reflection answers v1alpha too, with the file that defines a symbol', async () => {
    const client = clientFor('grpc/reflection/v1alpha/reflection.proto', [reflectionProtoRoot], ['grpc', 'reflection', 'v1alpha', 'ServerReflection'], sidecar.address);
    const stream = client.ServerReflectionInfo!() as grpc.ClientDuplexStream<object, Message>;
    const answers = collect(stream);
    stream.write({ list_services: '' });
    stream.write({ file_containing_symbol: 'toolruntime.v1.ToolSidecarService' });
    const [list, file] = await answers.next(2);
    stream.end();
    client.close();
    expect(list!.list_services_response.service.map((service: { name: string }) => service.name)).toContain('toolruntime.v1.ToolSidecarService');
    const descriptors: Buffer[] = file!.file_descriptor_response.file_descriptor_proto;
    expect(descriptors.some((bytes) => bytes.toString('latin1').includes('ToolSidecarService'))).toBe(true);
  });

  // Last: it stops the sidecar.
  it('Watch sends the status at once, SERVICE_UNKNOWN for an unknown service, then NOT_SERVING on drain', async () => {
    const server = collect(health.Watch!({ service: '' }) as grpc.ClientReadableStream<Message>);
    const unknown = collect(health.Watch!({ service: 'no.such.Service' }) as grpc.ClientReadableStream<Message>);
    expect((await server.next(1)).map((message) => message.status)).toEqual(['SERVING']);
    expect((await unknown.next(1)).map((message) => message.status)).toEqual(['SERVICE_UNKNOWN']);
    const stopped = sidecar.stop();
    expect((await server.next(2)).map((message) => message.status)).toEqual(['SERVING', 'NOT_SERVING']);
    expect(await stopped).toBe(0);
    // The unknown service stayed unknown: nothing more was sent for it.
    expect(unknown.messages.map((message) => message.status)).toEqual(['SERVICE_UNKNOWN']);
  });
});
