import * as grpc from '@grpc/grpc-js';
import { ServerReflectionService, type ServerReflectionRequest, type ServerReflectionResponse } from '../gen/grpc/reflection/v1/reflection.js';
import { errorMessage } from '../index.js';
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
  let loading: Promise<ReflectionDescriptors> | undefined;
  const load = () =>
    (loading ??= import('./reflection-descriptors.js').then(
      ({ createReflectionDescriptors }) => createReflectionDescriptors(services),
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));

  const handler: grpc.handleBidiStreamingCall<ServerReflectionRequest, ServerReflectionResponse> = (call) => {
    let queue = Promise.resolve();
    let failed = false;
    call.on('data', (request: ServerReflectionRequest) => {
      queue = queue.then(async () => {
        if (failed || call.cancelled) return;
        let descriptors: ReflectionDescriptors;
        try {
          descriptors = await load();
        } catch (error) {
          failed = true;
          call.emit('error', { code: grpc.status.INTERNAL, details: `server reflection is unavailable: ${errorMessage(error)}` });
          return;
        }
        if (!call.cancelled && !call.writableEnded) call.write(answer(descriptors, request));
      });
    });
    call.on('end', () => {
      void queue.then(() => {
        if (!failed && !call.writableEnded) call.end();
      });
    });
  };
  for (const service of REFLECTION_SERVICES) {
    const path = `/${service}/ServerReflectionInfo`;
    server.addService({ ServerReflectionInfo: { ...ServerReflectionService.serverReflectionInfo, path } }, { ServerReflectionInfo: handler });
  }
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
