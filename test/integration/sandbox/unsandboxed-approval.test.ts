import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSidecarClient, type SidecarClient } from '../../../controller/sidecar-client/create-sidecar-client.js';
import type { ApprovalRequestEvent } from '../../../controller/sidecar-client/sidecar-types.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';

// How approvals and the sandbox combine: nothing runs outside the sandbox the operator set without
// a person's approval. run_command offers `unsandboxed: true` only when the operator started the
// sidecar with --allow-unsandboxed and the turn did not tighten the sandbox; such a call asks the
// client whatever the turn's approval policy (here: none), and is denied when nobody can answer.
const suite = requireSystemTools({ suite: 'sandbox and approvals', tools: [{ name: 'bwrap', executable: '/usr/bin/bwrap' }], aptPackages: ['bubblewrap'] });

let dir: string;
let outside: string;
let allowing: StartedSidecar;
let plain: StartedSidecar;
let allowingClient: SidecarClient;
let plainClient: SidecarClient;
let turns = 0;

const signal = () => AbortSignal.timeout(30_000);
const touchOutside = (name: string) => ({ command: `touch ${join(outside, name)} && echo TOUCHED`, unsandboxed: true });

describe('run_command outside the sandbox', suite, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-approval-'));
    outside = join(dir, 'outside');
    for (const folder of ['ws', 'outside']) mkdirSync(join(dir, folder));
    const args = ['--workspace', join(dir, 'ws'), '--state-dir', join(dir, 'state'), '--sandbox', 'workspace-write', '--log-level', 'error'];
    [allowing, plain] = await Promise.all([startSidecar({ args: [...args, '--allow-unsandboxed'] }), startSidecar({ args })]);
    allowingClient = createSidecarClient({ address: allowing.address });
    plainClient = createSidecarClient({ address: plain.address });
  }, 60_000);
  afterAll(async () => {
    allowingClient?.close();
    plainClient?.close();
    await Promise.all([allowing?.stop(), plain?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('asks even under an approval policy of none; approved, it runs outside; denied, nothing runs', async () => {
    const asked: ApprovalRequestEvent[] = [];
    let answer = true;
    const turn = await allowingClient.openTurn(
      { agentId: 'agent-u', turnId: `t${++turns}`, approvalPolicy: { mode: 'none' } },
      { signal: signal(), approve: async (request) => (asked.push(request), { approved: answer, reason: answer ? '' : 'not today' }) },
    );
    const approved = await turn.call({ callId: 'u1', name: 'run_command', argumentsJson: JSON.stringify(touchOutside('approved')) }).result;
    expect(approved.error).toBeUndefined();
    expect(existsSync(join(outside, 'approved'))).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.approval.label).toContain('OUTSIDE the sandbox');
    expect(asked[0]!.approval.parameters).toMatchObject({ unsandboxed: true });
    answer = false;
    const denied = await turn.call({ callId: 'u2', name: 'run_command', argumentsJson: JSON.stringify(touchOutside('denied')) }).result;
    expect(denied.error?.code).toBe('denied');
    expect(existsSync(join(outside, 'denied'))).toBe(false);
    // A sandboxed command is not asked under this policy, and stays confined.
    const sandboxed = await turn.call({ callId: 'u3', name: 'run_command', argumentsJson: JSON.stringify({ command: `touch ${join(outside, 'sandboxed')}; true` }) }).result;
    expect(sandboxed.error).toBeUndefined();
    expect(existsSync(join(outside, 'sandboxed'))).toBe(false);
    expect(asked).toHaveLength(2);
    await turn.close();
  });

  it('with nobody to approve, an unsandboxed call is denied', async () => {
    const turn = await allowingClient.openTurn({ agentId: 'agent-u', turnId: `t${++turns}` }, { signal: signal() });
    const result = await turn.call({ callId: 'n1', name: 'run_command', argumentsJson: JSON.stringify(touchOutside('nobody')) }).result;
    expect(result.error?.code).toBe('denied');
    expect(existsSync(join(outside, 'nobody'))).toBe(false);
    await turn.close();
  });

  it('a turn that tightened the sandbox, or a sidecar without --allow-unsandboxed, offers no way out', async () => {
    const tightened = await allowingClient.openTurn({ agentId: 'agent-u', turnId: `t${++turns}`, sandbox: { networkOff: true } }, { signal: signal(), approve: async () => ({ approved: true }) });
    const plainTurn = await plainClient.openTurn({ agentId: 'agent-u', turnId: `t${++turns}` }, { signal: signal(), approve: async () => ({ approved: true }) });
    for (const [turn, name] of [[tightened, 'tightened'], [plainTurn, 'plain']] as const) {
      const schema = JSON.stringify(turn.tools.find((tool) => tool.name === 'run_command')?.parameters);
      expect(schema, name).not.toContain('unsandboxed');
      await turn.call({ callId: 'x', name: 'run_command', argumentsJson: JSON.stringify(touchOutside(name)) }).result;
      expect(existsSync(join(outside, name)), name).toBe(false);
      await turn.close();
    }
  });
});
