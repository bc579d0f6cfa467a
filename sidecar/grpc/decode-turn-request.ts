import { errorMessage } from '../../src/index.js';
import { TurnRequest } from '../../src/gen/toolruntime/v1/sidecar.js';

const UNDECODABLE = Symbol('undecodable');

/** A frame that is not a TurnRequest, as `decodeTurnRequest` hands it on. */
interface UndecodableTurnRequest extends TurnRequest {
  request: undefined;
  [UNDECODABLE]: string;
}

/**
 * Decodes one Turn request frame and never throws: bytes that are not a valid `TurnRequest`
 * (truncated, a wrong wire type, nesting past ts-proto's limit) become a request that
 * `undecodableReason` recognises, so the Turn handler fails the stream through its own path
 * (INVALID_ARGUMENT, nothing written after) instead of grpc-js ending the http2 stream under a
 * writer that still has events queued.
 */
export function decodeTurnRequest(bytes: Buffer): TurnRequest {
  try {
    return TurnRequest.decode(bytes);
  } catch (error) {
    const undecodable: UndecodableTurnRequest = {
      request: undefined,
      [UNDECODABLE]: `a ${bytes.length}-byte frame is not a valid TurnRequest (${errorMessage(error).slice(0, 200)})`,
    };
    return undecodable;
  }
}

/** Why `request` could not be decoded, or `undefined` for a request that decoded. */
export function undecodableReason(request: TurnRequest): string | undefined {
  return (request as Partial<UndecodableTurnRequest>)[UNDECODABLE];
}
