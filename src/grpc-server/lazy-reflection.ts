import * as grpc from '@grpc/grpc-js';
import type { ServerReflectionRequest, ServerReflectionResponse } from '../gen/grpc/reflection/v1/reflection.js';
import { errorMessage } from '../errors.js';
import { importOnFirstUse } from '../load-on-first-use.js';
import type { ReflectionDescriptors } from './reflection-descriptors.js';

/** The two versions of the reflection service: v1alpha's messages are v1's, field for field. */
const REFLECTION_SERVICES = ['grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection'];

/** Options of {@link addLazyReflection}. */
export interface LazyReflectionOptions {
  /** Full names of the services the server serves besides reflection (health included). */
  services: readonly string[];
}

/**
 * Adds gRPC server reflection (v1 and v1alpha) to `server`, describing exactly `options.services`
 * and the reflection service itself, from the proto files as written (src/gen/descriptors.ts, made
 * by `buf generate`): snake_case field names, real file names and imports, so grpcurl and
 * `buf curl` can call the services with the proto's own JSON. The descriptors are decoded on the
 * first reflection request (most servers never get one); if that fails, that call ends with
 * INTERNAL and the next one tries again. Requests on one stream are answered in order.
 */
export function addLazyReflection(server: grpc.Server, options: LazyReflectionOptions): void {
  const services = [...options.services, ...REFLECTION_SERVICES];
  const load = importOnFirstUse(() =>
    Promise.all([import('./reflection-descriptors.js'), import('../gen/grpc/reflection/v1/reflection.js')]).then(([{ createReflectionDescriptors }, messages]): Loaded => ({
      descriptors: createReflectionDescriptors(services),
      messages,
    })),
  );

  // Frames stay bytes until the first request has loaded the messages' code: the generated
  // reflection module is not on a server's start-up path either.
  const handler: grpc.handleBidiStreamingCall<Buffer, Buffer> = (call) => {
    let queue = Promise.resolve();
    let failed = false;
    const fail = (code: grpc.status, details: string) => {
      failed = true;
      call.emit('error', { code, details });
    };
    call.on('data', (frame: Buffer) => {
      queue = queue.then(async () => {
        if (failed || call.cancelled) return;
        let loaded: Loaded;
        try {
          loaded = await load();
        } catch (error) {
          fail(grpc.status.INTERNAL, `server reflection is unavailable: ${errorMessage(error)}`);
          return;
        }
        let request: ServerReflectionRequest;
        try {
          request = loaded.messages.ServerReflectionRequest.decode(frame);
        } catch (error) {
          fail(grpc.status.INVALID_ARGUMENT, `a ${frame.length}-byte frame is not a ServerReflectionRequest (${errorMessage(error).slice(0, 200)})`);
          return;
        }
        const response = answer(loaded.descriptors, request);
        if (!call.cancelled && !call.writableEnded) call.write(Buffer.from(loaded.messages.ServerReflectionResponse.encode(response).finish()));
      });
    });
    call.on('end', () => {
      void queue.then(() => {
        if (!failed && !call.writableEnded) call.end();
      });
    });
  };
  const bytes = (value: Buffer) => value;
  for (const service of REFLECTION_SERVICES) {
    const method = { path: `/${service}/ServerReflectionInfo`, requestStream: true, responseStream: true, requestSerialize: bytes, requestDeserialize: bytes, responseSerialize: bytes, responseDeserialize: bytes };
    server.addService({ ServerReflectionInfo: method }, { ServerReflectionInfo: handler });
  }
}

/** What the first reflection request loads: the descriptors to answer from, and the messages' code. */
interface Loaded {
  descriptors: ReflectionDescriptors;
  messages: typeof import('../gen/grpc/reflection/v1/reflection.js');
}

function answer(descriptors: ReflectionDescriptors, request: ServerReflectionRequest): ServerReflectionResponse {
  const respond = (messageResponse: ServerReflectionResponse['messageResponse']): ServerReflectionResponse => ({ validHost: request.host, originalRequest: request, messageResponse });
  const notFound = (what: string) => respond({ $case: 'errorResponse', value: { errorCode: grpc.status.NOT_FOUND, errorMessage: `${what} is not served here` } });
  const files = (found: Buffer[] | undefined, what: string) => (found ? respond({ $case: 'fileDescriptorResponse', value: { fileDescriptorProto: found } }) : notFound(what));
  const message = request.messageRequest;
  switch (message?.$case) {
    case 'listServices':
      return respond({ $case: 'listServicesResponse', value: { service: descriptors.services.map((name) => ({ name })) } });
    case 'fileByFilename':
      return files(descriptors.fileByName(message.value), `file ${JSON.stringify(message.value)}`);
    case 'fileContainingSymbol':
      return files(descriptors.fileContainingSymbol(message.value), `symbol ${JSON.stringify(message.value)}`);
    case 'fileContainingExtension':
      return notFound(`extension ${message.value.extensionNumber} of ${JSON.stringify(message.value.containingType)}`);
    case 'allExtensionNumbersOfType': {
      const numbers = descriptors.extensionNumbersOf(message.value);
      return numbers ? respond({ $case: 'allExtensionNumbersResponse', value: { baseTypeName: message.value, extensionNumber: numbers } }) : notFound(`type ${JSON.stringify(message.value)}`);
    }
    default:
      return respond({ $case: 'errorResponse', value: { errorCode: grpc.status.INVALID_ARGUMENT, errorMessage: 'the reflection request names no question' } });
  }
}
