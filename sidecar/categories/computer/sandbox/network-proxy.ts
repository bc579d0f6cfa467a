import { ToolRuntimeError } from '../../../../src/index.js';
import type { ProxyEndpoint } from './bwrap-argv.js';

/** The sidecar's proxy for `--network allow:HOSTS`, started on first use. */
export async function networkProxyFor(hosts: string[]): Promise<ProxyEndpoint> {
  throw new ToolRuntimeError('sandbox_unavailable', `--network allow:${hosts.join(',')} is not available yet`);
}
