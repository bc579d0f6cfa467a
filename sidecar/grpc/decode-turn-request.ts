import { errorMessage } from '../../src/errors.js';
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
    return decodeCallRequest(bytes) ?? TurnRequest.decode(bytes);
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

/** Non-ASCII strings are decoded as @bufbuild/protobuf's reader decodes them (U+FEFF kept, bad bytes replaced). */
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });
/** Strings up to this many bytes are checked for ASCII and built in JS. */
const SHORT_BYTES = 64;

/**
 * The common request, a `call`, decoded without ts-proto's reader (a reader, a DataView and a
 * recursion counter per message). Only the exact shape `TurnRequest { call = 2 }` holding known
 * CallTool fields with their own wire types and a `deadline_ms` under 2^28 is taken; anything else
 * (another request, an unknown field, a malformed frame) returns `undefined` and goes to ts-proto,
 * so every request decodes to what ts-proto makes of it. Never throws.
 */
export function decodeCallRequest(bytes: Buffer): TurnRequest | undefined {
  const end = bytes.length;
  if (end < 2 || bytes[0] !== 18) return undefined;
  let position = 1;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    if (shift > 21 || position >= end) return undefined;
    const byte = bytes[position++]!;
    length += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) break;
  }
  if (position + length !== end) return undefined;
  let callId = '';
  let name = '';
  let namespace = '';
  let argumentsJson = '';
  let deadlineMs = 0;
  let traceparent = '';
  let tracestate = '';
  while (position < end) {
    const tag = bytes[position++]!;
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (shift > 21 || position >= end) return undefined;
      const byte = bytes[position++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
    }
    if (tag === 40) {
      deadlineMs = value;
      continue;
    }
    // Length-delimited fields 1-4, 6 and 7 only (42 would be deadline_ms with the wrong wire type).
    if ((tag & 7) !== 2 || tag > 58 || tag === 42 || position + value > end) return undefined;
    const text = decodeString(bytes, position, value);
    position += value;
    switch (tag) {
      case 10:
        callId = text;
        break;
      case 18:
        name = text;
        break;
      case 26:
        namespace = text;
        break;
      case 34:
        argumentsJson = text;
        break;
      case 50:
        traceparent = text;
        break;
      case 58:
        tracestate = text;
        break;
      default:
        return undefined;
    }
  }
  return { request: { $case: 'call', value: { callId, name, namespace, argumentsJson, deadlineMs, traceparent, tracestate } } };
}

function decodeString(bytes: Buffer, start: number, length: number): string {
  if (length === 0) return '';
  const end = start + length;
  if (length > SHORT_BYTES) return utf8Decoder.decode(bytes.subarray(start, end));
  for (let index = start; index < end; index++) {
    if (bytes[index]! > 0x7f) return utf8Decoder.decode(bytes.subarray(start, end));
  }
  // ASCII: latin1 reads it byte for byte, and allocates nothing but the string.
  return bytes.toString('latin1', start, end);
}
