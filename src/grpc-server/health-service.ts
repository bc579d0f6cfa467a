import * as grpc from '@grpc/grpc-js';
import { HealthCheckResponse_ServingStatus as ServingStatus, HealthService, type HealthServer } from '../gen/grpc/health/v1/health.js';

/** A service's health as `grpc.health.v1` says it. */
export type HealthStatus = 'SERVING' | 'NOT_SERVING';

/** `grpc.health.v1.Health` for one server: Check, Watch and List over statuses the owner sets. */
export interface SidecarHealth {
  /** Sets a service's status (`''` is the whole server) and tells every Watch of it. */
  setStatus(service: string, status: HealthStatus): void;
  /** Adds the Health service to `server`. */
  addToServer(server: grpc.Server): void;
}

/**
 * Serves `grpc.health.v1.Health` from code generated from gRPC's own health.proto (ts-proto), so
 * the sidecar loads no .proto parser at start-up. Check answers a known service's status and
 * NOT_FOUND otherwise; Watch sends the current status at once (SERVICE_UNKNOWN for an unknown
 * service, without ending the call), then each change, until the client cancels or the server
 * shuts down; List returns every status.
 */
export function createSidecarHealth(initial: Record<string, HealthStatus>): SidecarHealth {
  const statuses = new Map<string, ServingStatus>(Object.entries(initial).map(([service, status]) => [service, ServingStatus[status]]));
  const watchers = new Map<string, Set<(status: ServingStatus) => void>>();

  const implementation: HealthServer = {
    check(call, callback) {
      const status = statuses.get(call.request.service);
      if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(call.request.service)}` });
      else callback(null, { status });
    },
    watch(call) {
      const service = call.request.service;
      const send = (status: ServingStatus) => {
        if (!call.cancelled && !call.writableEnded) call.write({ status });
      };
      let serviceWatchers = watchers.get(service);
      if (!serviceWatchers) watchers.set(service, (serviceWatchers = new Set()));
      serviceWatchers.add(send);
      call.once('cancelled', () => {
        serviceWatchers.delete(send);
        if (serviceWatchers.size === 0) watchers.delete(service);
      });
      send(statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN);
    },
    list(_call, callback) {
      callback(null, { statuses: Object.fromEntries([...statuses].map(([service, status]) => [service, { status }])) });
    },
  };

  return {
    setStatus(service, status) {
      const value = ServingStatus[status];
      if (statuses.get(service) === value) return;
      statuses.set(service, value);
      for (const send of watchers.get(service) ?? []) send(value);
    },
    addToServer(server) {
      server.addService(HealthService, implementation);
    },
  };
}
