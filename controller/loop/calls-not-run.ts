/**
 * The calls of a response that the loop does not run, each answered with an error output the
 * model can act on: a call cut off mid-arguments, the calls of a response that failed, and the
 * calls of the last response the model-call limit allows.
 */
import type { FunctionCallItem, ModelResponse, ResponseItem } from '../model/responses-model.js';
import { errorResult, type CallResult } from '../sidecar-client/sidecar-types.js';

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * True when `call`'s item was cut off: its own `status` is `incomplete`, or (for servers that give
 * items no status) it is the last item of an incomplete response and its arguments do not parse.
 * A call the provider calls complete is not cut off, even in an incomplete response: its
 * arguments go to the sidecar, whose repair ladder handles a provider's truncation.
 */
export function isCutOff(call: FunctionCallItem, response: ModelResponse): boolean {
  if (call.status === 'incomplete') return true;
  if (response.status !== 'incomplete' || call.status !== undefined) return false;
  return response.output.at(-1) === (call as ResponseItem) && !parses(call.arguments);
}

/** The output of a call whose arguments were cut off: it never ran. */
export function cutOffResult(call: FunctionCallItem, reason: string | undefined): CallResult {
  const why = reason === 'max_output_tokens' ? 'by the output limit (max_output_tokens)' : `(${reason ?? 'the response was incomplete'})`;
  return {
    ...errorResult(
      call.call_id,
      'invalid_arguments',
      `This call to ${call.name} was not run: its arguments were cut off ${why} before they were complete. ` +
        'Call it again with less: split large content over several calls.',
    ),
    completedLabel: `Not run ${call.name}: arguments cut off`,
  };
}

/** The output of a call that was not run because the turn stopped (`why` completes "the turn stopped ..."). */
export function stoppedResult(call: FunctionCallItem, why: string): CallResult {
  return {
    ...errorResult(call.call_id, 'aborted', `This call to ${call.name} was not run: the turn stopped ${why}${/[.!?]$/.test(why) ? '' : '.'}`),
    completedLabel: `Not run ${call.name}: the turn stopped`,
  };
}
