import { fromBinary, toBinary, type DescFile, type FileRegistry, createFileRegistry } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { FILE_DESCRIPTOR_SET_BASE64 } from '../gen/descriptors.js';

/** What server reflection answers from: the proto files as written, limited to what one server serves. */
export interface ReflectionDescriptors {
  /** The full names of the services the server serves, sorted. */
  readonly services: readonly string[];
  /** The serialized FileDescriptorProto of `fileName` and every file it imports (that one first), or undefined. */
  fileByName(fileName: string): Buffer[] | undefined;
  /** The same for the file that defines `symbol` (a package-qualified message, enum, service or method), or undefined. */
  fileContainingSymbol(symbol: string): Buffer[] | undefined;
  /** The extension numbers of message `typeName` (none in this project's protos), or undefined for an unknown type. */
  extensionNumbersOf(typeName: string): number[] | undefined;
}

/**
 * Builds the reflection index from src/gen/descriptors.ts (made by `buf generate`, so file names
 * are the import paths and field names are the proto's own snake_case ones). Only the files that
 * define `services`, and what they import, are visible: a symbol defined elsewhere is not found.
 *
 * @throws Error when a service in `services` is not in the descriptors (a programming error).
 */
export function createReflectionDescriptors(services: readonly string[]): ReflectionDescriptors {
  const registry: FileRegistry = createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from(FILE_DESCRIPTOR_SET_BASE64, 'base64')));
  const visible = new Set<DescFile>();
  const addWithImports = (file: DescFile) => {
    if (visible.has(file)) return;
    visible.add(file);
    for (const dependency of file.dependencies) addWithImports(dependency);
  };
  for (const service of services) {
    const desc = registry.getService(service);
    if (!desc) throw new Error(`server reflection has no descriptor for ${service}: run \`npm run generate\``);
    addWithImports(desc.file);
  }
  const encoded = new Map<DescFile, Buffer>();
  const encode = (file: DescFile) => {
    let bytes = encoded.get(file);
    if (!bytes) encoded.set(file, (bytes = Buffer.from(toBinary(FileDescriptorProtoSchema, file.proto))));
    return bytes;
  };
  /** `file` first, then its imports (each once): a client then has every type it needs. */
  const withImports = (file: DescFile) => {
    const ordered: DescFile[] = [];
    const walk = (next: DescFile) => {
      if (ordered.includes(next)) return;
      ordered.push(next);
      for (const dependency of next.dependencies) walk(dependency);
    };
    walk(file);
    return ordered.map(encode);
  };
  const fileOfSymbol = (symbol: string): DescFile | undefined => {
    const desc = registry.get(symbol);
    if (desc && 'file' in desc) return desc.file;
    // A method (`pkg.Service.Method`) or a field is not a registry entry of its own: try its parent.
    const parent = symbol.lastIndexOf('.');
    if (parent <= 0) return undefined;
    const owner = registry.get(symbol.slice(0, parent));
    if (owner?.kind === 'service' && owner.methods.some((method) => method.name === symbol.slice(parent + 1))) return owner.file;
    if (owner?.kind === 'message' && owner.fields.some((field) => field.name === symbol.slice(parent + 1))) return owner.file;
    return undefined;
  };
  return {
    services: [...services].sort(),
    fileByName(fileName) {
      const file = registry.getFile(fileName);
      return file && visible.has(file) ? withImports(file) : undefined;
    },
    fileContainingSymbol(symbol) {
      const file = fileOfSymbol(symbol);
      return file && visible.has(file) ? withImports(file) : undefined;
    },
    extensionNumbersOf(typeName) {
      const message = registry.getMessage(typeName);
      if (!message || !visible.has(message.file)) return undefined;
      return [...registry].filter((desc) => desc.kind === 'extension' && desc.extendee.typeName === typeName).map((desc) => (desc.kind === 'extension' ? desc.number : 0));
    },
  };
}
