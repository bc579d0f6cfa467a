// A TurnResponse encoder for the hot path: the same bytes as ts-proto's TurnResponse.encode (the
// unit test compares them), written into one exactly-sized Buffer in two passes instead of
// through a growing BinaryWriter with a fork per nested message and a final copy.
import {
  ToolSidecarServiceService,
  TurnResponse,
  type ContentPart,
  type ToolError,
  type ToolResult,
} from '../../src/gen/toolruntime/v1/sidecar.js';
import { capTurnResponse, minimalTurnResponse } from './cap-turn-response.js';
import { decodeTurnRequest } from './decode-turn-request.js';

/** Strings up to this many characters are measured and written in JS when they are ASCII. */
const SHORT_CHARS = 64;

/**
 * The UTF-8 length of `text`. A short string (call ids, labels, codes: most of what a quick call
 * sends) is scanned in JS, cheaper than a call into Buffer's native code; the length equals
 * `text.length` exactly when every character is ASCII.
 */
function utf8Length(text: string): number {
  const length = text.length;
  if (length > SHORT_CHARS) return Buffer.byteLength(text, 'utf8');
  for (let index = 0; index < length; index++) {
    if (text.charCodeAt(index) >= 0x80) return Buffer.byteLength(text, 'utf8');
  }
  return length;
}

function varintSize(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

/** A length-delimited field (tag under 16, so one byte) holding `length` bytes. */
const delimitedSize = (length: number) => 1 + varintSize(length) + length;
/** A proto3 string field: absent when empty. */
const optionalStringSize = (text: string) => (text === '' ? 0 : delimitedSize(utf8Length(text)));

function contentPartSize(part: ContentPart): number {
  switch (part.part?.$case) {
    case 'text':
    case 'json':
      return delimitedSize(utf8Length(part.part.value));
    case 'image': {
      const { data, mimeType } = part.part.value;
      return delimitedSize((data.length === 0 ? 0 : delimitedSize(data.length)) + optionalStringSize(mimeType));
    }
    default:
      return 0;
  }
}

const errorSize = (error: ToolError) => optionalStringSize(error.code) + optionalStringSize(error.message);

function resultSize(result: ToolResult): number {
  let size = 0;
  for (const part of result.content) size += delimitedSize(contentPartSize(part));
  size += optionalStringSize(result.detailsJson) + optionalStringSize(result.completedLabel);
  if (result.terminateTurn) size += 2;
  if (result.error !== undefined) size += delimitedSize(errorSize(result.error));
  for (const repair of result.repairs) size += delimitedSize(utf8Length(repair));
  const duration = result.durationMs >>> 0;
  if (duration !== 0) size += 1 + varintSize(duration);
  return size;
}

function writeVarint(buffer: Buffer, position: number, value: number): number {
  let rest = value >>> 0;
  while (rest >= 0x80) {
    buffer[position++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  buffer[position++] = rest;
  return position;
}

function writeString(buffer: Buffer, position: number, tag: number, text: string): number {
  buffer[position++] = tag;
  const length = utf8Length(text);
  position = writeVarint(buffer, position, length);
  if (length === text.length && length <= SHORT_CHARS) {
    // ASCII (see utf8Length): one byte per character.
    for (let index = 0; index < length; index++) buffer[position + index] = text.charCodeAt(index);
    return position + length;
  }
  return position + buffer.write(text, position, length, 'utf8');
}

const writeOptionalString = (buffer: Buffer, position: number, tag: number, text: string) =>
  text === '' ? position : writeString(buffer, position, tag, text);

function writeContentPart(buffer: Buffer, position: number, part: ContentPart): number {
  buffer[position++] = 10;
  position = writeVarint(buffer, position, contentPartSize(part));
  switch (part.part?.$case) {
    case 'text':
      return writeString(buffer, position, 10, part.part.value);
    case 'json':
      return writeString(buffer, position, 26, part.part.value);
    case 'image': {
      const { data, mimeType } = part.part.value;
      buffer[position++] = 18;
      position = writeVarint(buffer, position, (data.length === 0 ? 0 : delimitedSize(data.length)) + optionalStringSize(mimeType));
      if (data.length !== 0) {
        buffer[position++] = 10;
        position = writeVarint(buffer, position, data.length);
        buffer.set(data, position);
        position += data.length;
      }
      return writeOptionalString(buffer, position, 18, mimeType);
    }
    default:
      return position;
  }
}

function writeResult(buffer: Buffer, position: number, result: ToolResult): number {
  for (const part of result.content) position = writeContentPart(buffer, position, part);
  position = writeOptionalString(buffer, position, 18, result.detailsJson);
  position = writeOptionalString(buffer, position, 26, result.completedLabel);
  if (result.terminateTurn) {
    buffer[position++] = 32;
    buffer[position++] = 1;
  }
  if (result.error !== undefined) {
    buffer[position++] = 42;
    position = writeVarint(buffer, position, errorSize(result.error));
    position = writeOptionalString(buffer, position, 10, result.error.code);
    position = writeOptionalString(buffer, position, 18, result.error.message);
  }
  for (const repair of result.repairs) position = writeString(buffer, position, 50, repair);
  const duration = result.durationMs >>> 0;
  if (duration !== 0) {
    buffer[position++] = 56;
    position = writeVarint(buffer, position, duration);
  }
  return position;
}

/**
 * Encodes a TurnResponse to the protobuf wire format, byte for byte what ts-proto writes. The tool
 * set (once per turn) goes through ts-proto itself.
 */
export function encodeTurnResponse(message: TurnResponse): Buffer {
  const event = message.event;
  let inner: number;
  let tag: number;
  switch (event?.$case) {
    case 'activityStarted':
      tag = 26;
      inner = optionalStringSize(event.value.label);
      break;
    case 'presentation':
      tag = 34;
      inner = optionalStringSize(event.value.kind) + optionalStringSize(event.value.payloadJson);
      break;
    case 'result':
      tag = 42;
      inner = resultSize(event.value);
      break;
    case undefined:
      tag = 0;
      inner = 0;
      break;
    default:
      return Buffer.from(TurnResponse.encode(message).finish());
  }
  const size = optionalStringSize(message.callId) + (tag === 0 ? 0 : delimitedSize(inner));
  const buffer = Buffer.allocUnsafe(size);
  let position = writeOptionalString(buffer, 0, 10, message.callId);
  if (tag !== 0) {
    buffer[position++] = tag;
    position = writeVarint(buffer, position, inner);
    if (event?.$case === 'activityStarted') position = writeOptionalString(buffer, position, 10, event.value.label);
    else if (event?.$case === 'presentation') {
      position = writeOptionalString(buffer, position, 10, event.value.kind);
      position = writeOptionalString(buffer, position, 18, event.value.payloadJson);
    } else if (event?.$case === 'result') position = writeResult(buffer, position, event.value);
  }
  if (position !== size) throw new Error(`encodeTurnResponse wrote ${position} bytes, expected ${size}`);
  return buffer;
}

/**
 * The generated ToolSidecarService definition with `decodeTurnRequest` (which never throws)
 * decoding Turn's requests and `encodeTurnResponse` serialising its responses, each response kept
 * within `maxMessageBytes`: one that would pass it is cut (`capTurnResponse`) rather than sent, since
 * grpc-js would end the whole stream with RESOURCE_EXHAUSTED and every other call would lose its
 * result. The size check is one comparison on the hot path.
 */
export function createToolSidecarServiceDefinition(options: { maxMessageBytes: number }) {
  const { maxMessageBytes } = options;
  const serialize = (message: TurnResponse): Buffer => {
    const encoded = encodeTurnResponse(message);
    if (encoded.length <= maxMessageBytes) return encoded;
    const capped = encodeTurnResponse(capTurnResponse(message, maxMessageBytes));
    return capped.length <= maxMessageBytes ? capped : encodeTurnResponse(minimalTurnResponse(message, maxMessageBytes));
  };
  return {
    ...ToolSidecarServiceService,
    turn: { ...ToolSidecarServiceService.turn, requestDeserialize: decodeTurnRequest, responseSerialize: serialize },
  };
}
