import { createHash, timingSafeEqual } from 'node:crypto';
import { Metadata, ResponderBuilder, ServerInterceptingCall, ServerListenerBuilder, status, type ServerInterceptor } from '@grpc/grpc-js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * A server interceptor that lets an RPC through only when its metadata carries
 * `authorization: Bearer <token>`; any other RPC (health and reflection included) fails with
 * UNAUTHENTICATED. Tokens are compared in constant time (timingSafeEqual over SHA-256 digests, so
 * the length does not leak either).
 */
export function createTokenInterceptor(token: string): ServerInterceptor {
  const expected = digest(`Bearer ${token}`);
  return (_method, call) => {
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata: Metadata, next) => {
        const values = metadata.get('authorization');
        const given = values.length === 1 && typeof values[0] === 'string' ? values[0] : '';
        if (given !== '' && timingSafeEqual(digest(given), expected)) {
          next(metadata);
          return;
        }
        call.sendStatus({
          code: status.UNAUTHENTICATED,
          details: given === '' ? 'missing `authorization: Bearer <token>` metadata' : 'the bearer token is wrong',
          metadata: new Metadata(),
        });
      })
      .build();
    const responder = new ResponderBuilder().withStart((next) => next(listener)).build();
    return new ServerInterceptingCall(call, responder);
  };
}
