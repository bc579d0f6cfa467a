import { parseArgs } from 'node:util';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { errorMessage } from '../../../src/index.js';
import { parseArgsMessage } from '../../../src/cli-usage.js';
import { approvalStateToJSON, ControlPlaneServiceClient, type Approval } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { CliIo } from '../../cli/cli-io.js';
import { findControlToken } from '../grpc/control-token.js';
import { defaultDataDir } from '../store/default-data-dir.js';

const USAGE = `Usage: npm run controller -- approvals list [--all] [--agent ID] [--json]
       npm run controller -- approvals approve ID [--reason TEXT]
       npm run controller -- approvals deny ID [--reason TEXT]
ID: an approval's id, or a prefix of it that only one pending approval has

Lists and decides the calls that wait for approval in turns a \`controller serve\` runs (background
jobs, scheduled turns), through its ControlPlaneService.

Options:
  --address ADDR        the serve process (default 127.0.0.1:7400; unix:PATH for a socket)
  --data-dir DIR        the serve process's data folder, where it wrote the token it generated
                        (default ~/.local/state/tools-runtime/controller)
  --token-file FILE     bearer token (first line of FILE): the serve process's --token-file
  --all                 list decided and expired approvals too (default: pending only)
  --agent ID            only this agent's approvals
  --json                one JSON object per approval, per line (the proto's snake_case field names)
  --reason TEXT         why (the model reads it when a call is denied)`;

/** `approvalId` -> `approval_id`: JSON output uses the proto's own field names, as `workflow list` does. */
function snakeCaseKeys(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`), field]));
}

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
        'data-dir': { type: 'string' },
        all: { type: 'boolean' },
        agent: { type: 'string' },
        json: { type: 'boolean' },
        reason: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    io.stderr.write(`error: ${parseArgsMessage(error)}\n(npm run controller -- approvals --help lists the options)\n`);
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
  const address = values.address ?? '127.0.0.1:7400';
  const metadata = new Metadata();
  try {
    // The serve process's token: --token-file, else the one it generated under its data folder.
    const dataDir = values['data-dir'] ?? defaultDataDir();
    const token = await findControlToken({ ...(values['token-file'] ? { tokenFile: values['token-file'] } : {}), dataDir, kind: 'control-plane', address });
    metadata.set('authorization', `Bearer ${token}`);
  } catch (error) {
    io.stderr.write(`error: ${errorMessage(error)}\n`);
    return 1;
  }
  const client = new ControlPlaneServiceClient(address, credentials.createInsecure());
  const deadline = new Date(Date.now() + 10_000);
  const unary = <Req, Res>(method: (request: Req, metadata: Metadata, options: { deadline: Date }, callback: (error: ServiceError | null, response: Res) => void) => unknown, request: Req) =>
    new Promise<Res>((resolve, reject) => {
      const call = method.call(client, request, metadata, { deadline }, (error, response) => (error ? reject(error) : resolve(response))) as { cancel(): void };
      io.signal.addEventListener('abort', () => call.cancel(), { once: true });
    });
  try {
    if (action === 'list') {
      const { approvals } = await unary(client.listApprovals, { agentId: values.agent ?? '', pendingOnly: values.all !== true });
      if (values.json) for (const approval of approvals) io.stdout.write(`${JSON.stringify(snakeCaseKeys({ ...approval, state: stateName(approval) }))}\n`);
      else io.stdout.write(approvals.length === 0 ? `no ${values.all ? '' : 'pending '}approvals\n` : `${approvals.map(line).join('\n')}\n`);
    } else {
      // A unique prefix of a pending approval's id will do, as people copy ids shortened.
      const pending = (await unary(client.listApprovals, { agentId: '', pendingOnly: true })).approvals.map((approval) => approval.approvalId);
      let matches = pending.includes(id!) ? [id!] : pending.filter((approvalId) => approvalId.startsWith(id!));
      if (matches.length === 0) {
        // No pending one: a prefix of one decided or expired is sent whole, so the answer is the
        // server's "no longer pending: it is denied", not "no approval" for an id that exists.
        const all = (await unary(client.listApprovals, { agentId: '', pendingOnly: false })).approvals.map((approval) => approval.approvalId);
        matches = all.includes(id!) ? [id!] : all.filter((approvalId) => approvalId.startsWith(id!));
      }
      if (matches.length > 1) {
        io.stderr.write(`error: ${matches.length} approvals start with "${id}" (${matches.join(', ')}); give more of the id\n`);
        return 1;
      }
      const { approval } = await unary(client.decideApproval, { approvalId: matches[0] ?? id!, approved: action === 'approve', reason: values.reason ?? '' });
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
