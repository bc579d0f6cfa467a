// The ControlPlaneService server on real gRPC (127.0.0.1:0): health and reflection as generic
// clients see them, the token on every service, and ControlErrors as statuses.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createControlPlaneServer, type ControlPlaneServer } from '../../../controller/control-plane/grpc/control-plane-server.js';
import { ControlPlaneServiceService, type ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { silentLogger } from '../../../src/index.js';
import { controlPlaneClient } from '../../fixtures/control-plane-client.js';

// gRPC's reflection.proto, as the project keeps it (proto/grpc/reflection/).
const reflectionProtoRoot = fileURLToPath(new URL('../../../proto/', import.meta.url));
// gRPC's own health.proto, as the project keeps it (proto/grpc/health/v1/).
const healthProto = fileURLToPath(new URL('../../../proto/grpc/health/v1/health.proto', import.meta.url));
type AnyClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

function clientFor(file: string, includeDirs: string[], service: string[], address: string): AnyClient {
  const definition = grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true, enums: String, defaults: true, oneofs: true, includeDirs }));
  let node: unknown = definition;
  for (const part of service) node = (node as Record<string, unknown>)[part];
  return new (node as new (address: string, credentials: grpc.ChannelCredentials) => AnyClient)(address, grpc.credentials.createInsecure());
}

const received: ControlRequest[] = [];
const decided: string[] = [];
let server: ControlPlaneServer;
let address: string;
beforeAll(async () => {
  server = createControlPlaneServer({
    token: 'open-sesame',
    logger: silentLogger,
    approvals: {
      list: async () => ({ approvals: [] }),
      decide: async (request) => {
        decided.push(request.approvalId);
        return { approval: undefined };
      },
    },
    async answer(request) {
      received.push(request);
      if (request.request?.$case === 'showJob') return { reply: { $case: 'error', value: { code: 'not_found', message: 'no job "x" for this agent' } } };
      return { reply: { $case: 'listJobs', value: { jobs: [] } } };
    },
  });
  address = await server.listen('127.0.0.1:0');
});
afterAll(() => server?.close({ graceMs: 0 }));

const authorized = () => {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', 'Bearer open-sesame');
  return metadata;
};

describe('the ControlPlaneService server', () => {
  it('serves grpc.health.v1 behind the token', async () => {
    const client = clientFor(healthProto, [], ['grpc', 'health', 'v1', 'Health'], address);
    const check = (service: string, metadata = authorized()) =>
      new Promise<Record<string, unknown>>((resolve, reject) =>
        client.Check!({ service }, metadata, (error: Error | null, value: Record<string, unknown>) => (error ? reject(error) : resolve(value))),
      );
    expect((await check('')).status).toBe('SERVING');
    expect((await check('toolruntime.v1.ControlPlaneService')).status).toBe('SERVING');
    await expect(check('', new grpc.Metadata())).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    client.close();
  });

  it('lists ControlPlaneService through server reflection', async () => {
    const client = clientFor('grpc/reflection/v1/reflection.proto', [reflectionProtoRoot], ['grpc', 'reflection', 'v1', 'ServerReflection'], address);
    const stream = client.ServerReflectionInfo!(authorized()) as grpc.ClientDuplexStream<object, Record<string, any>>;
    const response = new Promise<Record<string, any>>((resolve, reject) => {
      stream.on('data', resolve);
      stream.on('error', reject);
    });
    stream.write({ list_services: '' });
    const answer = await response;
    stream.end();
    client.close();
    expect(answer.list_services_response.service.map((service: { name: string }) => service.name)).toContain('toolruntime.v1.ControlPlaneService');
  });

  it('wraps each RPC into the ControlRequest of its case and turns a ControlError into its status', async () => {
    const client = controlPlaneClient(address, 'open-sesame');
    expect(await client.listJobs({ agentId: 'agent-a', limit: 3 })).toEqual({ jobs: [] });
    expect(received.at(-1)).toEqual({ request: { $case: 'listJobs', value: { agentId: 'agent-a', limit: 3 } } });
    await expect(client.showJob({ agentId: 'agent-a', jobId: 'x' })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: 'no job "x" for this agent' });
    // An answer of the wrong case is the server's bug, not a success.
    await expect(client.listSchedules({})).rejects.toMatchObject({ code: grpc.status.INTERNAL });
    client.close();
  });

  it('refuses every ControlPlaneService method without the token, or with a wrong one, before any handler runs (loopback too)', async () => {
    const client = new grpc.Client(address, grpc.credentials.createInsecure());
    const methods = Object.values(ControlPlaneServiceService).map((method) => method.path);
    expect(methods).toContain('/toolruntime.v1.ControlPlaneService/DecideApproval');
    expect(methods.length).toBeGreaterThanOrEqual(13);
    const before = received.length;
    for (const authorization of [undefined, 'Bearer open-sesam', 'open-sesame', 'Bearer open-sesame ']) {
      for (const path of methods) {
        const metadata = new grpc.Metadata();
        if (authorization) metadata.set('authorization', authorization);
        // An empty message is a valid encoding of every request type: only the token can refuse it.
        const code = await new Promise<number>((resolve) =>
          client.makeUnaryRequest(path, (value: Buffer) => value, (value: Buffer) => value, Buffer.alloc(0), metadata, { deadline: Date.now() + 10_000 }, (error) => resolve(error?.code ?? grpc.status.OK)),
        );
        expect([path, authorization, code]).toEqual([path, authorization, grpc.status.UNAUTHENTICATED]);
      }
    }
    expect(received.length).toBe(before);
    expect(decided).toEqual([]);
    client.close();
  });
});
