/** The key a tool is found by in one turn: `namespace.name`, or the bare name. */
export function toolKey(name: string, namespace?: string): string {
  return namespace ? `${namespace}.${name}` : name;
}
