// What tracing costs the sidecar: a no-op call's round trip over the Turn stream and the process's
// RSS, with telemetry off (no OpenTelemetry module loaded) and on (spans and metrics exported over
// OTLP/JSON to a local sink), beside a second sidecar with it off (the noise between two equal
// processes). Calls carry a traceparent when tracing is on, as the controller sends them.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { startOtlpReceiver } from '../../test/fixtures/otlp-receiver.js';
import { startSidecar, type StartedSidecar } from '../../test/fixtures/start-sidecar.js';
import { ToolSidecarServiceClient, TurnKind, type TurnRequest, type TurnResponse } from '../../src/gen/toolruntime/v1/sidecar.js';
import { quantile, type BenchRow } from '../bench-row.js';
import { localTokenOptions } from '../../test/integration/sidecar/turn-driver.js';

const WARM_UP = 5_000;
const ROUNDS = 5;
const PER_ROUND = 600;

interface Target {
  sidecar: StartedSidecar;
  send: (index: number) => Promise<void>;
  close: () => void;
  samples: number[];
}

/** The sidecar's node process: tsx's child, or tsx itself when it has none. */
function nodePid(pid: number): number {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    if (children[0]) return Number(children[0]);
  } catch {
    // no /proc children list: measure the child itself
  }
  return pid;
}

/** RSS in MB of the sidecar's node process. */
function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${nodePid(pid)}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** CPU time (user + system) in ms the sidecar's node process has used, from /proc (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${nodePid(pid)}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function openTarget(workspace: string, env: NodeJS.ProcessEnv, traced: boolean): Promise<Target> {
  const sidecar = await startSidecar({ entry: 'test/fixtures/fixture-sidecar.ts', args: ['--workspace', workspace, '--log-level', 'warn'], env });
  const client = new ToolSidecarServiceClient(sidecar.address, grpc.credentials.createInsecure(), localTokenOptions(sidecar.address));
  const stream = client.turn();
  const waiting = new Map<string, () => void>();
  let opened!: () => void;
  const ready = new Promise<void>((resolve) => (opened = resolve));
  stream.on('data', (response: TurnResponse) => {
    if (response.event?.$case === 'toolSet') opened();
    else if (response.event?.$case === 'result') {
      waiting.get(response.callId)?.();
      waiting.delete(response.callId);
    }
  });
  stream.on('error', () => {});
  const open: TurnRequest = { request: { $case: 'open', value: { context: { agentId: 'bench', turnId: 'bench-turn', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined } } } };
  stream.write(open);
  await ready;
  const traceId = randomBytes(16).toString('hex');
  return {
    sidecar,
    samples: [],
    send: (index) =>
      new Promise<void>((resolve) => {
        const callId = `c${index}`;
        waiting.set(callId, resolve);
        const traceparent = traced ? `00-${traceId}-${randomBytes(8).toString('hex')}-01` : '';
        stream.write({ request: { $case: 'call', value: { callId, name: 'noop', namespace: '', argumentsJson: '{}', deadlineMs: 0, traceparent, tracestate: '' } } });
      }),
    close: () => {
      stream.end();
      client.close();
    },
  };
}

/** Runs the telemetry rows. */
export async function run(): Promise<BenchRow[]> {
  const sink = await startOtlpReceiver({ parse: false });
  const workspace = mkdtempSync(join(tmpdir(), 'bench-telemetry-'));
  const off = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: '', OTEL_METRICS_EXPORTER: '' };
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '500', OTEL_METRIC_EXPORT_INTERVAL: '5000' };
  const targets: Record<'off' | 'offAgain' | 'on', Target> = {
    off: await openTarget(workspace, off, false),
    offAgain: await openTarget(workspace, off, false),
    on: await openTarget(workspace, on, true),
  };
  try {
    let next = 0;
    for (const target of Object.values(targets)) for (let index = 0; index < WARM_UP; index++) await target.send(next++);
    // CPU over the measured rounds: what a call costs the sidecar, whether or not it is on the call's path.
    const cpuBefore = Object.fromEntries(Object.entries(targets).map(([name, target]) => [name, cpuMs(target.sidecar.child.pid!)]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of Object.values(targets)) {
        for (let index = 0; index < PER_ROUND; index++) {
          const start = performance.now();
          await target.send(next++);
          target.samples.push((performance.now() - start) * 1000);
        }
      }
    }
    // Let the traced sidecar's batch processor export what the rounds left queued (OTEL_BSP_SCHEDULE_DELAY 500 ms).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const cpuPerCall = Object.fromEntries(Object.entries(targets).map(([name, target]) => [name, ((cpuMs(target.sidecar.child.pid!) - cpuBefore[name]!) * 1000) / (ROUNDS * PER_ROUND)])) as Record<keyof typeof targets, number>;
    const p50 = (target: Target) => quantile(target.samples, 0.5);
    const rss = Object.fromEntries(Object.entries(targets).map(([name, target]) => [name, rssMb(target.sidecar.child.pid!)])) as Record<keyof typeof targets, number>;
    const calls = WARM_UP + ROUNDS * PER_ROUND;
    return [
      { suite: 'telemetry', name: 'no-op round trip, telemetry off', value: p50(targets.off), unit: 'µs p50', reference: 'a second sidecar, off', ratio: p50(targets.off) / p50(targets.offAgain), note: 'A/A: the noise between two equal sidecars' },
      { suite: 'telemetry', name: 'no-op round trip, tracing on (OTLP sink)', value: p50(targets.on), unit: 'µs p50', reference: 'telemetry off', ratio: p50(targets.on) / p50(targets.off), note: `4 spans a call + metrics, exported to a loopback OTLP/JSON sink (${Math.round(sink.bytes / 1e6)} MB received)` },
      { suite: 'telemetry', name: 'sidecar CPU per no-op call, telemetry off', value: cpuPerCall.off, unit: 'µs', reference: 'a second sidecar, off', ratio: cpuPerCall.off / cpuPerCall.offAgain, note: `user + system over ${ROUNDS * PER_ROUND} calls (10 ms ticks)` },
      { suite: 'telemetry', name: 'sidecar CPU per no-op call, tracing on', value: cpuPerCall.on, unit: 'µs', reference: 'telemetry off', ratio: cpuPerCall.on / cpuPerCall.off, note: 'spans, metrics and the export included, on the call path or not' },
      { suite: 'telemetry', name: `sidecar RSS after ${calls} calls, off`, value: rss.off, unit: 'MB', reference: 'a second sidecar, off', ratio: rss.off / rss.offAgain, note: 'no OpenTelemetry module loaded' },
      { suite: 'telemetry', name: `sidecar RSS after ${calls} calls, tracing on`, value: rss.on, unit: 'MB', reference: 'telemetry off', ratio: rss.on / rss.off, note: 'the SDK, exporters and batch queue' },
    ];
  } finally {
    for (const target of Object.values(targets)) {
      target.close();
      await target.sidecar.stop('SIGKILL');
    }
    await sink.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}
