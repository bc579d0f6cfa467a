import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createTerminalApprover, denyWithoutTerminal, recordApprovals } from '../../../../controller/approvals/terminal-approver.js';
import type { TurnEvent } from '../../../../controller/loop/turn-events.js';
import type { ApprovalRequestEvent } from '../../../../controller/sidecar-client/sidecar-types.js';

const request = (callId: string, label = 'Running `rm -rf build`'): ApprovalRequestEvent => ({
  callId,
  requestId: `r-${callId}`,
  kind: 'approval',
  approval: { toolName: 'run_command', label, parameters: { command: 'rm -rf build' }, readOnly: false, destructive: true },
});

function terminal() {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.setEncoding('utf8').on('data', (chunk: string) => (shown += chunk));
  const approver = createTerminalApprover({ input, output });
  const waitFor = async (text: string, count = 1) => {
    const deadline = Date.now() + 10_000;
    while (shown.split(text).length - 1 < count) {
      if (Date.now() > deadline) throw new Error(`"${text}" not shown ${count} times; shown:\n${shown}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { input, approver, waitFor, shown: () => shown };
}

describe('the terminal approver', () => {
  it('shows the label and parameters, approves on y and denies on anything else, one question at a time', async () => {
    const { input, approver, waitFor, shown } = terminal();
    const never = new AbortController().signal;
    const first = approver.approve(request('c1'), never);
    const second = approver.approve(request('c2', 'Running `make clean`'), never);
    await waitFor('Allow? [y/N]');
    expect(shown()).toContain('? run_command (destructive) wants to run: Running `rm -rf build`');
    expect(shown()).toContain('"command": "rm -rf build"');
    expect(shown()).not.toContain('make clean');
    input.write('y\n');
    expect(await first).toEqual({ approved: true });
    await waitFor('Allow? [y/N]', 2);
    expect(shown()).toContain('make clean');
    input.write('\n');
    expect(await second).toEqual({ approved: false, reason: 'the user declined it at the terminal' });
    approver.close();
  });

  it('withdraws a question whose call ended, and denies once the input has ended', async () => {
    const { input, approver, waitFor } = terminal();
    const call = new AbortController();
    const withdrawn = approver.approve(request('c1'), call.signal);
    await waitFor('Allow? [y/N]');
    call.abort();
    expect(await withdrawn).toMatchObject({ approved: false, reason: 'the call ended before anyone decided' });
    const next = approver.approve(request('c2'), new AbortController().signal);
    await waitFor('Allow? [y/N]', 2);
    input.end();
    expect(await next).toMatchObject({ approved: false, reason: expect.stringContaining('input ended') });
    approver.close();
  });

  it('records each request and decision as turn events', async () => {
    const events: TurnEvent[] = [];
    const approve = recordApprovals(denyWithoutTerminal, (event) => events.push(event), 'no-terminal');
    const decision = await approve(request('c1'), new AbortController().signal);
    expect(decision.approved).toBe(false);
    expect(events).toEqual([
      { type: 'approval-requested', callId: 'c1', requestId: 'r-c1', name: 'run_command', label: 'Running `rm -rf build`', parameters: { command: 'rm -rf build' }, readOnly: false, destructive: true },
      { type: 'approval-decided', callId: 'c1', requestId: 'r-c1', name: 'run_command', approved: false, reason: expect.stringContaining('--approve never'), decidedBy: 'no-terminal' },
    ]);
  });
});
