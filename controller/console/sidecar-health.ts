import { Client, credentials, Metadata } from '@grpc/grpc-js';

/** What `grpc.health.v1.Health/Check` said about a sidecar (`unreachable`: no answer in time). */
export type SidecarHealth = 'serving' | 'not_serving' | 'unknown' | 'unreachable';

const statuses: Record<number, SidecarHealth> = { 0: 'unknown', 1: 'serving', 2: 'not_serving', 3: 'unknown' };

/**
 * Asks a sidecar's gRPC health service for its overall status (service ""). The request and the
 * response are one-field messages, encoded here rather than loading the health proto. Never throws:
 * an error, `timeoutMs` (default 2 s) passing or `signal` aborting give `unreachable`.
 */
export function checkSidecarHealth(options: { address: string; token?: string; signal: AbortSignal; timeoutMs?: number }): Promise<SidecarHealth> {
  if (options.signal.aborted) return Promise.resolve('unreachable');
  const client = new Client(options.address, credentials.createInsecure());
  const metadata = new Metadata();
  if (options.token) metadata.set('authorization', `Bearer ${options.token}`);
  return new Promise<SidecarHealth>((resolve) => {
    const call = client.makeUnaryRequest<Buffer, Buffer>(
      '/grpc.health.v1.Health/Check',
      (request) => request,
      (bytes) => bytes,
      Buffer.alloc(0),
      metadata,
      { deadline: Date.now() + (options.timeoutMs ?? 2_000) },
      (error, response) => {
        options.signal.removeEventListener('abort', onAbort);
        if (error || !response) return resolve('unreachable');
        // HealthCheckResponse { ServingStatus status = 1; }: absent (0 bytes) is UNKNOWN.
        resolve(response.length >= 2 && response[0] === 0x08 ? (statuses[response[1]!] ?? 'unknown') : 'unknown');
      },
    );
    const onAbort = () => call.cancel();
    options.signal.addEventListener('abort', onAbort, { once: true });
  }).finally(() => client.close());
}
