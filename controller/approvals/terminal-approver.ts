import { createInterface, type Interface } from 'node:readline/promises';
import { errorMessage } from '../../src/index.js';
import type { TurnEvent } from '../loop/turn-events.js';
import type { ApprovalDecision, ApprovalRequestEvent, ApproveCallback } from '../sidecar-client/sidecar-types.js';

/** Who decided an approval, as the turn events record it. */
export type ApprovalDecider = 'terminal' | 'no-terminal' | 'callback' | 'control-plane' | 'console';

/** An approver with a lifetime (the terminal's line reader). */
export interface ClosableApprover {
  approve: ApproveCallback;
  /** Stops reading the terminal; questions still open are denied. */
  close(): void;
}

function describe(request: ApprovalRequestEvent, maxChars = 2_000): string {
  const { approval } = request;
  const name = approval.namespace ? `${approval.namespace}.${approval.toolName}` : approval.toolName;
  let parameters = typeof approval.parameters === 'string' ? approval.parameters : JSON.stringify(approval.parameters, null, 2);
  if (parameters.length > maxChars) parameters = `${parameters.slice(0, maxChars)}\n… (${parameters.length - maxChars} more characters)`;
  const kind = approval.destructive ? 'destructive' : approval.readOnly ? 'read-only' : 'changes things';
  return [`? ${name} (${kind}) wants to run: ${approval.label}`, ...parameters.split('\n').map((line) => `    ${line}`)].join('\n');
}

/**
 * Asks at a terminal: shows each call's label and parameters on `output` and reads y/N from
 * `input`, one question at a time (calls that wait meanwhile queue up). Only "y" or "yes" approves;
 * an empty line, anything else, or the input ending denies. A question whose call ends meanwhile
 * (its signal aborts) is withdrawn and the next one asked.
 */
export function createTerminalApprover(options: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream }): ClosableApprover {
  let lines: Interface | undefined;
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();
  const reader = () => {
    if (!lines) {
      lines = createInterface({ input: options.input, output: options.output, terminal: false });
      lines.once('close', () => {
        closed = true;
      });
    }
    return lines;
  };

  const ask = async (request: ApprovalRequestEvent, signal: AbortSignal): Promise<ApprovalDecision> => {
    if (signal.aborted) return { approved: false, reason: 'the call ended before anyone decided' };
    if (closed) return { approved: false, reason: 'the terminal input ended, so nobody could approve the call' };
    const rl = reader();
    options.output.write(`${describe(request)}\n`);
    const ended = new Promise<string | undefined>((resolve) => rl.once('close', () => resolve(undefined)));
    try {
      const answer = await Promise.race([rl.question('  Allow? [y/N] ', { signal }), ended]);
      if (answer === undefined) return { approved: false, reason: 'the terminal input ended, so nobody could approve the call' };
      const approved = /^\s*(y|yes)\s*$/i.test(answer);
      return approved ? { approved } : { approved, reason: 'the user declined it at the terminal' };
    } catch (error) {
      if (signal.aborted) {
        options.output.write('\n  (withdrawn: the call ended before a decision)\n');
        return { approved: false, reason: 'the call ended before anyone decided' };
      }
      return { approved: false, reason: `the terminal could not be asked: ${errorMessage(error)}` };
    }
  };

  return {
    approve(request, signal) {
      const next = queue.then(() => ask(request, signal));
      queue = next.catch(() => undefined);
      return next;
    },
    close() {
      closed = true;
      lines?.close();
    },
  };
}

/** Denies every approval with a reason the model can read: there is no terminal to ask. */
export const denyWithoutTerminal: ApproveCallback = async () => ({
  approved: false,
  reason: 'no one is at a terminal to approve it (the controller runs without one; start it with --approve never to let such calls run)',
});

/**
 * Wraps an approver so each request and its decision become turn events (`approval-requested`,
 * `approval-decided`), also when the call ends before anyone decided.
 */
export function recordApprovals(approve: ApproveCallback, emit: (event: TurnEvent) => void, decidedBy: ApprovalDecider): ApproveCallback {
  return async (request, signal) => {
    const { approval } = request;
    emit({
      type: 'approval-requested',
      callId: request.callId,
      requestId: request.requestId,
      name: approval.toolName,
      ...(approval.namespace ? { namespace: approval.namespace } : {}),
      label: approval.label,
      parameters: approval.parameters,
      readOnly: approval.readOnly,
      destructive: approval.destructive,
    });
    let decision: ApprovalDecision;
    try {
      decision = await approve(request, signal);
    } catch (error) {
      decision = { approved: false, reason: `the approver failed: ${errorMessage(error)}` };
    }
    emit({
      type: 'approval-decided',
      callId: request.callId,
      requestId: request.requestId,
      name: approval.toolName,
      approved: decision.approved,
      ...(decision.reason ? { reason: decision.reason } : {}),
      decidedBy: signal.aborted ? 'call-ended' : decidedBy,
    });
    return decision;
  };
}
