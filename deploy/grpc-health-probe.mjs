#!/usr/bin/env node
// A gRPC health probe for Kubernetes exec probes: one grpc.health.v1.Health/Check call carrying
// `authorization: Bearer <token>`, which Kubernetes' own grpc probe cannot send. Plain JavaScript
// (no build step, no tsx), so a probe costs one short node process.
//
//   node deploy/grpc-health-probe.mjs --address 127.0.0.1:7000 --token-file FILE [--service NAME] [--live] [--timeout-ms N]
//
// Readiness (default): exit 0 only when the service is SERVING. Liveness (--live): exit 0 whenever
// the server answers at all, NOT_SERVING included (a draining process is alive and must not be
// killed). Anything else exits 1 with one line on stderr.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import grpc from '@grpc/grpc-js';

const STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

function fail(message) {
  process.stderr.write(`grpc-health-probe: ${message}\n`);
  process.exit(1);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      address: { type: 'string' },
      'token-file': { type: 'string' },
      service: { type: 'string', default: '' },
      live: { type: 'boolean', default: false },
      'timeout-ms': { type: 'string', default: '2000' },
    },
  }));
} catch (error) {
  fail(error.message);
}
if (!values.address) fail('--address HOST:PORT is required');
const timeoutMs = Number(values['timeout-ms']);
if (!Number.isInteger(timeoutMs) || timeoutMs < 1) fail(`--timeout-ms must be a positive integer, not "${values['timeout-ms']}"`);

const metadata = new grpc.Metadata();
if (values['token-file']) {
  let token;
  try {
    token = readFileSync(values['token-file'], 'utf8').split('\n')[0].trim();
  } catch (error) {
    fail(`cannot read the token file ${values['token-file']}: ${error.message}`);
  }
  if (!token) fail(`the token file ${values['token-file']} is empty`);
  metadata.set('authorization', `Bearer ${token}`);
}

// HealthCheckRequest { string service = 1; } and HealthCheckResponse { ServingStatus status = 1; },
// encoded by hand: two fields do not need a protobuf library.
const service = Buffer.from(values.service, 'utf8');
if (service.length > 127) fail('--service is too long');
const request = service.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, service.length]), service]);
const decode = (buffer) => (buffer.length >= 2 && buffer[0] === 0x08 ? buffer[1] : 0);

const client = new grpc.Client(values.address, grpc.credentials.createInsecure());
client.makeUnaryRequest(
  '/grpc.health.v1.Health/Check',
  (value) => value,
  (value) => value,
  request,
  metadata,
  { deadline: Date.now() + timeoutMs },
  (error, response) => {
    client.close();
    if (error) fail(`${values.address}: ${error.details || error.message}`);
    const status = STATUS[decode(response)] ?? 'UNKNOWN';
    if (values.live || status === 'SERVING') {
      process.stdout.write(`${status}\n`);
      process.exit(0);
    }
    fail(`${values.address} ${values.service || '(server)'}: ${status}`);
  },
);
