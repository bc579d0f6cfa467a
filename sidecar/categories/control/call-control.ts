import { ToolRuntimeError } from '../../../src/index.js';
import type { ControlReply, ControlRequest } from './control-messages.js';
import type { ControlChannel } from '../category.js';

type Reply = NonNullable<ControlReply['reply']>;
/** The reply kinds that answer an operation (everything but `error`). */
export type ControlReplyCase = Exclude<Reply['$case'], 'error'>;
/** The response message of one reply kind. */
export type ControlReplyValue<C extends ControlReplyCase> = Extract<Reply, { $case: C }>['value'];

/**
 * Sends one control operation for the call `callId` over the turn's channel and returns the
 * response of the expected kind. The agent is left empty: the controller acts as the turn's agent.
 *
 * @throws ToolRuntimeError `tool_failed` when the control plane refuses (its ControlError's code and
 *   message, written for the model) or answers with another kind; rejects with the signal's reason
 *   when the call is cancelled, passes its deadline or its turn ends while waiting.
 */
export async function callControl<C extends ControlReplyCase>(options: {
  channel: ControlChannel;
  callId: string;
  request: NonNullable<ControlRequest['request']>;
  expect: C;
  signal: AbortSignal;
}): Promise<ControlReplyValue<C>> {
  const reply = await options.channel.request(options.callId, { request: options.request }, options.signal);
  const answer = reply.reply;
  if (answer?.$case === 'error') {
    const { code, message } = answer.value;
    throw new ToolRuntimeError('tool_failed', `the control plane refused (${code || 'error'}): ${message || 'no reason given'}`);
  }
  if (answer?.$case !== options.expect) {
    throw new ToolRuntimeError('tool_failed', `the control plane answered ${answer ? answer.$case : 'nothing'} instead of ${options.expect}; try again later`);
  }
  return answer.value as ControlReplyValue<C>;
}
