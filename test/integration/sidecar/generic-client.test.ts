// Drives the sidecar the way a client in another language would: from the .proto file alone
// (through @grpc/proto-loader, no generated code), plus the generic health and reflection services.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { localTokenOptions } from './turn-driver.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
// gRPC's reflection.proto, as the project keeps it (proto/grpc/reflection/).
const reflectionProtoRoot = fileURLToPath(new URL('../../../proto/', import.meta.url));
const healthProto = join(root, 'proto', 'grpc', 'health', 'v1', 'health.proto');

type AnyClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;
const loaderOptions = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true } as const;

function clientFor(file: string, includeDirs: string[], service: string[], address: string): AnyClient {
  const definition = grpc.loadPackageDefinition(protoLoader.loadSync(file, { ...loaderOptions, includeDirs }));
  let node: unknown = definition;
  for (const part of service) node = (node as Record<string, unknown>)[part];
  const Constructor = node as new (address: string, credentials: grpc.ChannelCredentials, options: grpc.ClientOptions) => AnyClient;
  return new Constructor(address, grpc.credentials.createInsecure(), localTokenOptions(address));
}

let sidecar: StartedSidecar;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sidecar-generic-'));
  sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--workspace', dir, '--state-dir', join(dir, 'state')] });
});
afterAll(async () => {
  expect(await sidecar?.stop()).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

describe('a client built from the .proto alone', () => {
  it('opens a turn and runs a call with plain JSON-like objects', async () => {
    const client = clientFor('toolruntime/v1/sidecar.proto', [join(root, 'proto')], ['toolruntime', 'v1', 'ToolSidecarService'], sidecar.address);
    const stream = client.Turn!() as grpc.ClientDuplexStream<object, Record<string, any>>;
    const received: Array<Record<string, any>> = [];
    const ended = new Promise<void>((resolve) => stream.on('end', resolve));
    stream.on('data', (message) => received.push(message));
    stream.write({ open: { context: { agent_id: 'proto-only', turn_id: 't1', kind: 'TURN_KIND_TEXT' } } });
    stream.write({ call: { call_id: 'c1', name: 'echo', arguments_json: '{"hello": "world"}' } });
    stream.end();
    await ended;
    client.close();
    expect(received[0]?.event).toBe('tool_set');
    expect(received[0]?.tool_set.tools.map((tool: { name: string }) => tool.name)).toContain('echo');
    const events = received.slice(1).map((message) => [message.call_id, message.event]);
    expect(events).toEqual([['c1', 'activity_started'], ['c1', 'result']]);
    expect(received[2]?.result.content[0].text).toBe('{"hello":"world"}');
  });

  it('answers AssembleTools for a workflow task turn with its own catalog', async () => {
    const client = clientFor('toolruntime/v1/sidecar.proto', [join(root, 'proto')], ['toolruntime', 'v1', 'ToolSidecarService'], sidecar.address);
    const response = await new Promise<Record<string, any>>((resolve, reject) =>
      client.AssembleTools!({ context: { kind: 'TURN_KIND_WORKFLOW_TASK' } }, (error: Error | null, value: Record<string, any>) => (error ? reject(error) : resolve(value))),
    );
    client.close();
    expect(response.tools.map((tool: { name: string }) => tool.name)).toEqual(['echo', 'terminate']);
  });

  it('serves grpc.health.v1', async () => {
    const client = clientFor(healthProto, [], ['grpc', 'health', 'v1', 'Health'], sidecar.address);
    const check = (service: string) =>
      new Promise<Record<string, any>>((resolve, reject) =>
        client.Check!({ service }, (error: Error | null, value: Record<string, any>) => (error ? reject(error) : resolve(value))),
      );
    expect((await check('')).status).toBe('SERVING');
    expect((await check('toolruntime.v1.ToolSidecarService')).status).toBe('SERVING');
    client.close();
  });

  it('lists the service through server reflection', async () => {
    const client = clientFor('grpc/reflection/v1/reflection.proto', [reflectionProtoRoot], ['grpc', 'reflection', 'v1', 'ServerReflection'], sidecar.address);
    const stream = client.ServerReflectionInfo!() as grpc.ClientDuplexStream<object, Record<string, any>>;
    const response = new Promise<Record<string, any>>((resolve, reject) => {
      stream.on('data', resolve);
      stream.on('error', reject);
    });
    stream.write({ list_services: '' });
    const answer = await response;
    stream.end();
    client.close();
    const names = answer.list_services_response.service.map((service: { name: string }) => service.name);
    expect(names).toContain('toolruntime.v1.ToolSidecarService');
  });
});
