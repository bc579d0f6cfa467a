/**
 * The environment a command runs with: the sidecar's own variables named in `allowList`, then
 * `extra` on top. Nothing else leaks from the sidecar (no tokens, no keys it happens to hold).
 */
export function commandEnv(options: {
  allowList: readonly string[];
  extra: Readonly<Record<string, string>>;
  source?: NodeJS.ProcessEnv;
}): NodeJS.ProcessEnv {
  const source = options.source ?? process.env;
  const env: NodeJS.ProcessEnv = {};
  for (const name of options.allowList) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...options.extra };
}
