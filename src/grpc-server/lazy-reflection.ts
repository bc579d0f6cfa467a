import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import type * as ProtoLoader from '@grpc/proto-loader';
import type * as Reflection from '@grpc/reflection';
import { errorMessage } from '../index.js';
import { loadOnFirstUse } from '../load-on-first-use.js';
import { runtimePath } from '../runtime-path.js';

const loadReflection = loadOnFirstUse<typeof Reflection>('@grpc/reflection');
const loadProtoLoader = loadOnFirstUse<typeof ProtoLoader>('@grpc/proto-loader');

const paths = ['/grpc.reflection.v1.ServerReflection/ServerReflectionInfo', '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo'];

interface LoadedMethod {
  definition: grpc.MethodDefinition<unknown, unknown>;
  handler: (stream: EventEmitter) => void;
}

/**
 * Adds gRPC server reflection (v1 and v1alpha) for `protoFile` (under the project's `proto/`) to
 * `server`, without loading it: @grpc/reflection, proto-loader and protobufjs load, and the proto
 * is parsed, on the first reflection request. Until then the two methods are registered with
 * pass-through serializers; their calls are handed to @grpc/reflection's own handlers. If loading
 * fails, that call ends with INTERNAL and the next one tries again.
 */
export function addLazyReflection(server: grpc.Server, protoFile: string): void {
  let loaded: Map<string, LoadedMethod> | undefined;
  const load = () => {
    if (loaded) return loaded;
    const packageDefinition = loadProtoLoader().loadSync(protoFile, { includeDirs: [runtimePath('proto/')] });
    const methods = new Map<string, LoadedMethod>();
    // @grpc/reflection registers its services itself: let it register on a recorder, keep the handlers.
    const recorder = {
      addService(service: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation) {
        for (const [name, definition] of Object.entries(service)) {
          methods.set(definition.path, { definition, handler: implementation[name] as LoadedMethod['handler'] });
        }
      },
    };
    new (loadReflection().ReflectionService)(packageDefinition).addToServer(recorder as unknown as grpc.Server);
    loaded = methods;
    return methods;
  };

  for (const path of paths) {
    const passThrough = (buffer: Buffer) => buffer;
    const service: grpc.ServiceDefinition = {
      ServerReflectionInfo: {
        path,
        requestStream: true,
        responseStream: true,
        requestSerialize: passThrough,
        requestDeserialize: passThrough,
        responseSerialize: passThrough,
        responseDeserialize: passThrough,
      },
    };
    const handler: grpc.handleBidiStreamingCall<Buffer, Buffer> = (call) => {
      let method: LoadedMethod | undefined;
      try {
        method = load().get(path);
        if (!method) throw new Error(`@grpc/reflection serves no ${path}`);
      } catch (error) {
        call.emit('error', { code: grpc.status.INTERNAL, details: `server reflection is unavailable: ${errorMessage(error)}` });
        return;
      }
      const { definition } = method;
      // What @grpc/reflection's handler uses of a stream: data and end events, write() and end().
      const stream = Object.assign(new EventEmitter(), {
        write: (message: unknown) => call.write(definition.responseSerialize(message)),
        end: () => call.end(),
      });
      call.on('data', (buffer: Buffer) => {
        let message: unknown;
        try {
          message = definition.requestDeserialize(buffer);
        } catch (error) {
          call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `undecodable reflection request: ${errorMessage(error)}` });
          return;
        }
        stream.emit('data', message);
      });
      call.on('end', () => stream.emit('end'));
      method.handler(stream);
    };
    server.addService(service, { ServerReflectionInfo: handler });
  }
}
