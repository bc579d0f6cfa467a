// Whether each mounted MCP server is up, for the sidecar's health service: a server that is down
// must show, not only be missing from the tools (issue 38). Process-wide, as the sandbox's prober
// is, so the gRPC layer can follow it without knowing the catalogs. No SDK import: cheap to load.

/** A mounted server's state: up, or down with the reason (its first error line among it). */
export interface McpServerStatus {
  name: string;
  up: boolean;
  reason?: string;
}

const statuses = new Map<string, McpServerStatus>();
const listeners = new Set<(status: McpServerStatus) => void>();

/** Records a server's state and tells the listeners (the health service). */
export function reportMcpServerStatus(status: McpServerStatus): void {
  statuses.set(status.name, status);
  for (const listener of listeners) listener(status);
}

/** Every mounted server's last state, and each change after: returns the unsubscribe. */
export function watchMcpServerStatus(listener: (status: McpServerStatus) => void): () => void {
  for (const status of statuses.values()) listener(status);
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The health service's name for a mounted MCP server. */
export const mcpServerHealthName = (name: string) => `toolruntime.v1.McpServer/${name}`;
