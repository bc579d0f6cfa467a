import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { readTraceHeaders } from '../../../sidecar/telemetry/trace-headers.js';

const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function metadataOf(entries: Array<[string, string]>): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of entries) metadata.add(key, value);
  return metadata;
}

describe('readTraceHeaders', () => {
  it('reads one traceparent and joins the tracestate values into one list', () => {
    expect(readTraceHeaders(metadataOf([['traceparent', ` ${parent} `], ['tracestate', 'a=1'], ['tracestate', 'b=2']]))).toEqual({ traceparent: parent, tracestate: 'a=1,b=2' });
    expect(readTraceHeaders(metadataOf([['traceparent', parent]]))).toEqual({ traceparent: parent, tracestate: '' });
  });

  it('ignores an absent, repeated or oversized traceparent, and drops an oversized tracestate', () => {
    expect(readTraceHeaders(metadataOf([['authorization', 'Bearer x']]))).toBeUndefined();
    expect(readTraceHeaders(metadataOf([['traceparent', parent], ['traceparent', parent]]))).toBeUndefined();
    expect(readTraceHeaders(metadataOf([['traceparent', `${parent}${'0'.repeat(2_000)}`]]))).toBeUndefined();
    expect(readTraceHeaders(metadataOf([['traceparent', parent], ['tracestate', `a=${'x'.repeat(2_000)}`]]))).toEqual({ traceparent: parent, tracestate: '' });
  });
});
