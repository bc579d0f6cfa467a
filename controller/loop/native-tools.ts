/**
 * The Responses API's own coding tools, `apply_patch` and `shell`, offered instead of the sidecar's
 * function tools for the same jobs. A sidecar tool says which provider tool it executes
 * (`ToolDefinition.nativeTool`): the loop offers `{ type: 'apply_patch' }` / `{ type: 'shell' }`
 * in their place, and native-calls.ts turns the model's `apply_patch_call` / `shell_call` items into
 * calls of those sidecar tools and their results into the output items the API defines.
 */
import type { ProviderTool } from '../model/responses-model.js';
import type { ToolDefinition } from '../sidecar-client/sidecar-types.js';

/** How a user chooses: `auto` follows the model (see `nativeToolsFor`), `on` and `off` force it. */
export type NativeToolsMode = 'auto' | 'on' | 'off';

/** The native tools of one turn. */
export interface NativeToolPlan {
  /** The provider tools offered in place of the replaced functions. */
  providerTools: ProviderTool[];
  /** The sidecar tool that executes `apply_patch_call` items, when offered. */
  applyPatch?: ToolDefinition;
  /** The sidecar tool that executes each command of a `shell_call` item, when offered. */
  shell?: ToolDefinition;
  /** The sidecar tools not offered as functions, because a provider tool stands for them. */
  replaced: Set<ToolDefinition>;
}

/** A plan that offers nothing native (every tool stays a function). */
export const NO_NATIVE_TOOLS: NativeToolPlan = { providerTools: [], replaced: new Set() };

/**
 * The native tools a turn offers: for each provider tool (`apply_patch`, `shell`), the first
 * top-level sidecar tool that declares it executes it. A namespaced or deferred tool is never
 * replaced (the provider's tool has neither).
 */
export function planNativeTools(tools: readonly ToolDefinition[], enabled: boolean): NativeToolPlan {
  if (!enabled) return NO_NATIVE_TOOLS;
  const pick = (kind: 'apply_patch' | 'shell') => tools.find((tool) => tool.nativeTool === kind && !tool.namespace && !tool.deferLoading);
  const applyPatch = pick('apply_patch');
  const shell = pick('shell');
  const providerTools: ProviderTool[] = [];
  const replaced = new Set<ToolDefinition>();
  if (applyPatch) {
    providerTools.push({ type: 'apply_patch' });
    replaced.add(applyPatch);
  }
  if (shell) {
    providerTools.push({ type: 'shell', environment: { type: 'local' } });
    replaced.add(shell);
  }
  return { providerTools, replaced, ...(applyPatch ? { applyPatch } : {}), ...(shell ? { shell } : {}) };
}

/**
 * Models that OpenAI documents with the `apply_patch` and `shell` tools: GPT-5.1 and later, and
 * the Codex models. `auto` offers the native tools only to these, at OpenAI's own endpoint; any
 * other server (a local one, a proxy that may not know the tool types) gets function tools.
 */
const NATIVE_MODEL = /^(gpt-5\.[1-9]\d*|gpt-5[.-]?\d*-?codex|codex-|gpt-[6-9])/i;

/**
 * Whether a turn offers the native tools: `on`/`off` as given; `auto` for a model `NATIVE_MODEL`
 * matches at OpenAI's endpoint (no base URL, or `api.openai.com`).
 */
export function nativeToolsFor(mode: NativeToolsMode, model: { name: string; baseURL?: string }): boolean {
  if (mode !== 'auto') return mode === 'on';
  const official = model.baseURL === undefined || /^https:\/\/api\.openai\.com(\/|$)/.test(model.baseURL);
  return official && NATIVE_MODEL.test(model.name);
}

/** `--native-tools`'s value, checked. @throws Error naming the accepted values. */
export function parseNativeToolsMode(text: string): NativeToolsMode {
  if (text === 'auto' || text === 'on' || text === 'off') return text;
  throw new Error(`expected auto, on or off, got ${JSON.stringify(text)}`);
}
