import type { ModelResponse, ModelUsage, ResponseItem } from './responses-model.js';

/** A Responses API `response` object as a server sends it (the fields the loop reads). */
export interface RawResponse {
  id?: string;
  status?: string;
  output?: ResponseItem[];
  usage?: ModelUsage | null;
  incomplete_details?: { reason?: string } | null;
  error?: { code?: string; message?: string } | null;
}

/**
 * The one reading of a response's outcome, for the JSON and the SSE paths alike: `status` is set
 * only when the response did not complete (`incomplete` with `incomplete_details.reason`, `failed`
 * with its error, `cancelled`); any other status counts as completed. `output` replaces the
 * response's own output when given (items assembled from a stream).
 */
export function toModelResponse(raw: RawResponse, output?: ResponseItem[]): ModelResponse {
  const base: ModelResponse = {
    id: typeof raw.id === 'string' ? raw.id : '',
    output: output ?? (Array.isArray(raw.output) ? raw.output : []),
    ...(raw.usage ? { usage: raw.usage } : {}),
  };
  if (raw.status === 'incomplete') return { ...base, status: 'incomplete', reason: raw.incomplete_details?.reason || 'no reason given' };
  if (raw.status === 'failed') {
    const error = raw.error;
    const reason = error?.message ? `${error.code ? `${error.code}: ` : ''}${error.message}` : (error?.code ?? 'no reason given');
    return { ...base, status: 'failed', reason };
  }
  if (raw.status === 'cancelled') return { ...base, status: 'cancelled', reason: 'the response was cancelled' };
  return base;
}
