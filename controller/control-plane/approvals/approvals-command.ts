import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { errorMessage } from '../../../src/index.js';
import { approvalStateToJSON, ControlPlaneServiceClient, type Approval } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { CliIo } from '../../cli-io.js';

const USAGE = `Usage: npm run controller -- approvals list [--all] [--agent ID] [--json]
       npm run controller -- approvals approve ID [--reason TEXT]
       npm run controller -- approvals deny ID [--reason TEXT]

Lists and decides the calls that wait for approval in turns a \`controller serve\` runs (background
jobs, scheduled turns), through its ControlPlaneService.

Options:
  --address HOST:PORT   the serve process (default 127.0.0.1:7400)
  --token-file FILE     bearer token (first line of FILE)
  --all                 list decided and expired approvals too (default: pending only)
  --agent ID            only this agent's approvals
  --json                one JSON object per approval, per line
  --reason TEXT         why (the model reads it when a call is denied)`;

const stateName = (approval: Approval) => approvalStateToJSON(approval.state).replace('APPROVAL_STATE_', '').toLowerCase();

function line(approval: Approval): string {
  const name = approval.namespace ? `${approval.namespace}.${approval.toolName}` : approval.toolName;
  const parameters = approval.parametersJson.length > 200 ? `${approval.parametersJson.slice(0, 199)}…` : approval.parametersJson;
  const when = approval.state === 1 ? `expires ${approval.expiresAt}` : `decided ${approval.decidedAt}${approval.reason ? ` (${approval.reason})` : ''}`;
  return `${approval.approvalId}  ${stateName(approval)}  agent ${approval.agentId}  ${name}${approval.destructive ? ' (destructive)' : ''}: ${approval.label}\n    ${parameters}\n    ${when}`;
}

/**
 * `approvals list|approve ID|deny ID`: the operator's side of stored approvals. Returns 0 on
 * success, 1 with a one-line reason when the serve process refuses or cannot be reached (within
 * 10 s), 2 on bad usage.
 */
export async function runApprovalsCommand(args: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        address: { type: 'string' },
        'token-file': { type: 'string' },
        all: { type: 'boolean' },
        agent: { type: 'string' },
        json: { type: 'boolean' },
        reason: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    io.stderr.write(`error: ${errorMessage(error)}\n\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [action, id, ...extra] = positionals;
  const deciding = action === 'approve' || action === 'deny';
  if ((action !== 'list' && !deciding) || (deciding && !id) || (action === 'list' && id) || extra.length > 0) {
    io.stderr.write(`error: expected "list", "approve ID" or "deny ID", got "${positionals.join(' ')}"\n\n${USAGE}\n`);
    return 2;
  }
  const metadata = new Metadata();
  if (values['token-file']) {
    const token = (await readFile(values['token-file'], 'utf8').catch(() => '')).split('\n')[0]?.trim();
    if (!token) {
      io.stderr.write(`error: cannot read a token from ${values['token-file']}\n`);
      return 1;
    }
    metadata.set('authorization', `Bearer ${token}`);
  }
  const client = new ControlPlaneServiceClient(values.address ?? '127.0.0.1:7400', credentials.createInsecure());
  const deadline = new Date(Date.now() + 10_000);
  const unary = <Req, Res>(method: (request: Req, metadata: Metadata, options: { deadline: Date }, callback: (error: ServiceError | null, response: Res) => void) => unknown, request: Req) =>
    new Promise<Res>((resolve, reject) => {
      const call = method.call(client, request, metadata, { deadline }, (error, response) => (error ? reject(error) : resolve(response))) as { cancel(): void };
      io.signal.addEventListener('abort', () => call.cancel(), { once: true });
    });
  try {
    if (action === 'list') {
      const { approvals } = await unary(client.listApprovals, { agentId: values.agent ?? '', pendingOnly: values.all !== true });
      if (values.json) for (const approval of approvals) io.stdout.write(`${JSON.stringify({ ...approval, state: stateName(approval) })}\n`);
      else io.stdout.write(approvals.length === 0 ? `no ${values.all ? '' : 'pending '}approvals\n` : `${approvals.map(line).join('\n')}\n`);
    } else {
      const { approval } = await unary(client.decideApproval, { approvalId: id!, approved: action === 'approve', reason: values.reason ?? '' });
      io.stdout.write(`${approval ? line(approval) : id}\n`);
    }
    return 0;
  } catch (error) {
    const details = (error as Partial<ServiceError>).details;
    io.stderr.write(`error: ${(details || errorMessage(error)).split('\n')[0]}\n`);
    return 1;
  } finally {
    client.close();
  }
}
