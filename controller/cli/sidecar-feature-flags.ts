import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ToolRuntimeError } from '../../src/errors.js';

// Kept light on purpose: `npm start` parses its flags (and spawns the sidecar) before it loads the
// rest of the controller, so nothing here may import the src/ barrel, grpc-js or zod.

/**
 * What a sidecar the controller starts is given beyond its workspace: the same flags its users
 * would pass it by hand (`npm run sidecar -- --help`). Paths are absolute.
 */
export interface SidecarFeatures {
  /** `--tools MODULE`, in order: users' own tool categories (a path or a package name). */
  tools?: string[];
  /** `--network MODE`: the sandbox's network for commands (`off`, `on`, `proxy:HOSTS`...). */
  network?: string;
  /** `--web-fetch`: offer the web_fetch tool. */
  webFetch?: boolean;
  /** `--brain DIR`: the knowledge base the Brain tools read. */
  brain?: string;
  /** `--skills DIR`: the folder of skills a turn may enable. */
  skills?: string;
  /** `--hide PATH`: more paths the model's processes and file tools must not see. */
  hide?: string[];
}

/** What each turn opened on the sidecar turns on (the sidecar offers it only when it has it). */
export interface TurnFeatures {
  brainEnabled?: boolean;
  enabledSkills?: string[];
}

/** The sidecar flags for `features`, to append to its command line. */
export function sidecarFeatureArgs(features: SidecarFeatures): string[] {
  return [
    ...(features.tools ?? []).flatMap((module) => ['--tools', module]),
    ...(features.network !== undefined ? ['--network', features.network] : []),
    ...(features.webFetch ? ['--web-fetch'] : []),
    ...(features.brain !== undefined ? ['--brain', features.brain] : []),
    ...(features.skills !== undefined ? ['--skills', features.skills] : []),
    ...(features.hide ?? []).flatMap((path) => ['--hide', path]),
  ];
}

/**
 * A `--tools` value as the started sidecar should get it: a path (`./x.js`, `../x`, `/x`, `file:`)
 * made absolute against the folder the command was run in, a package name as given (the sidecar
 * looks it up in node_modules from that folder, which it inherits).
 */
export function absoluteToolModule(specifier: string): string {
  if (specifier.startsWith('.')) return resolve(specifier);
  return specifier;
}

/** The parseArgs options these features add to `npm start` (kept apart from its other flags). */
export const sidecarFeatureFlagOptions = {
  tools: { type: 'string', multiple: true },
  network: { type: 'string' },
  'web-fetch': { type: 'boolean' },
  brain: { type: 'string' },
  skills: { type: 'string' },
  skill: { type: 'string', multiple: true },
  'enable-brain': { type: 'boolean' },
  hide: { type: 'string', multiple: true },
  instructions: { type: 'string' },
  'instructions-file': { type: 'string' },
  'ca-file': { type: 'string' },
} as const;

/** The values parseArgs gives for `sidecarFeatureFlagOptions`. */
export interface SidecarFeatureFlagValues {
  tools?: string[];
  network?: string;
  'web-fetch'?: boolean;
  brain?: string;
  skills?: string;
  skill?: string[];
  'enable-brain'?: boolean;
  hide?: string[];
  instructions?: string;
  'instructions-file'?: string;
  'ca-file'?: string;
}

/** What the feature flags of `npm start` come to. */
export interface SidecarFeatureOptions {
  /** For the sidecar `npm start` starts (empty with `--sidecar`). */
  features: SidecarFeatures;
  turnFeatures: TurnFeatures;
  /** `--instructions` / `--instructions-file`: the system prompt, instead of the default one. */
  instructions?: string;
  /** `--ca-file`: the PEM of the CA (or the self-signed certificate) of a TLS `--sidecar`. */
  caFile?: string;
}

const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function existingFolder(flag: string, path: string): string {
  const absolute = resolve(path);
  if (statSync(absolute, { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new ToolRuntimeError('invalid_request', `${flag} ${path} is not an existing folder`);
  }
  return absolute;
}

/**
 * Checks the feature flags and resolves their paths. Flags for the started sidecar (`--tools`,
 * `--network`, `--web-fetch`, `--brain`, `--skills`, `--hide`) are refused with `--sidecar`: a
 * running sidecar has its own; there `--enable-brain` and `--skill` turn on what it has.
 *
 * @throws ToolRuntimeError `invalid_request` with the reason and the fix.
 */
export function parseSidecarFeatureFlags(values: SidecarFeatureFlagValues, options: { runningSidecar: boolean }): SidecarFeatureOptions {
  const forStarted = (['tools', 'network', 'web-fetch', 'brain', 'skills', 'hide'] as const).filter((flag) => values[flag] !== undefined);
  if (options.runningSidecar && forStarted.length > 0) {
    const flag = forStarted[0]!;
    const fix = flag === 'brain' ? ' (--enable-brain turns on the Brain the running sidecar has)' : '';
    throw new ToolRuntimeError('invalid_request', `--${flag} goes to the sidecar this command starts; a running --sidecar has its own${fix}`);
  }
  if (!options.runningSidecar && values['enable-brain']) throw new ToolRuntimeError('invalid_request', '--enable-brain is for a running --sidecar; for the sidecar this command starts give --brain DIR');
  if (!options.runningSidecar && values['ca-file'] !== undefined) throw new ToolRuntimeError('invalid_request', '--ca-file goes with --sidecar (the sidecar this command starts speaks plaintext on loopback)');
  if (values.skill !== undefined && !options.runningSidecar && values.skills === undefined) {
    throw new ToolRuntimeError('invalid_request', '--skill NAME needs --skills DIR (the folder the started sidecar reads skills from)');
  }
  const badSkill = (values.skill ?? []).find((name) => !SKILL_NAME.test(name));
  if (badSkill !== undefined) throw new ToolRuntimeError('invalid_request', `--skill ${JSON.stringify(badSkill)}: a skill name is its folder's name (letters, digits, ".", "_", "-")`);
  if (values.instructions !== undefined && values['instructions-file'] !== undefined) {
    throw new ToolRuntimeError('invalid_request', 'choose one of --instructions and --instructions-file');
  }
  let instructions = values.instructions;
  if (values['instructions-file'] !== undefined) {
    try {
      instructions = readFileSync(values['instructions-file'], 'utf8');
    } catch (error) {
      throw new ToolRuntimeError('invalid_request', `--instructions-file: cannot read ${values['instructions-file']}: ${(error as Error).message}`);
    }
  }
  if (instructions !== undefined && instructions.trim() === '') throw new ToolRuntimeError('invalid_request', 'the instructions are empty (leave the flag out for the default ones)');
  if (values.network !== undefined && !/^(off|on|allow:.+)$/.test(values.network)) {
    throw new ToolRuntimeError('invalid_request', `--network must be "off", "on" or "allow:HOST,...", not "${values.network}"`);
  }
  for (const given of values.hide ?? []) if (given.trim() === '') throw new ToolRuntimeError('invalid_request', '--hide: expected a path, got an empty string');
  if (values['ca-file'] !== undefined && statSync(values['ca-file'], { throwIfNoEntry: false })?.isFile() !== true) {
    throw new ToolRuntimeError('invalid_request', `--ca-file ${values['ca-file']} is not a file (the PEM of the sidecar's CA, or its certificate when self-signed)`);
  }
  const features: SidecarFeatures = {
    ...(values.tools ? { tools: values.tools.map(absoluteToolModule) } : {}),
    ...(values.network !== undefined ? { network: values.network } : {}),
    ...(values['web-fetch'] ? { webFetch: true } : {}),
    ...(values.brain !== undefined ? { brain: existingFolder('--brain', values.brain) } : {}),
    ...(values.skills !== undefined ? { skills: existingFolder('--skills', values.skills) } : {}),
    ...(values.hide ? { hide: values.hide.map((path) => resolve(path)) } : {}),
  };
  const turnFeatures: TurnFeatures = {
    ...(values.brain !== undefined || values['enable-brain'] ? { brainEnabled: true } : {}),
    ...(values.skill ? { enabledSkills: [...new Set(values.skill)] } : {}),
  };
  return {
    features,
    turnFeatures,
    ...(instructions !== undefined ? { instructions } : {}),
    ...(values['ca-file'] !== undefined ? { caFile: resolve(values['ca-file']) } : {}),
  };
}

/** The `--help` lines of these flags. */
export const SIDECAR_FEATURE_USAGE = `What the started sidecar offers (the same flags as npm run sidecar; refused with --sidecar):
  --tools MODULE          a module of your own tools (repeatable): ./my-tools.js, or an installed
                          package's name (docs/package.md); TypeScript needs npm run dev:sidecar
  --network MODE          the commands' network: off (default), on, or allow:HOST,... (docs/sandbox.md)
  --web-fetch             offer the web_fetch tool
  --brain DIR             a knowledge base of Markdown pages; the workflow tasks the turn starts
                          get the Brain tools (recall, get_page)
  --skills DIR            the skills folder; enable skills for the turn with --skill NAME
  --hide PATH             a path the model's commands and file tools must not see (repeatable)
What the turn turns on:
  --skill NAME            enable a skill for the turn (repeatable)
  --enable-brain          with --sidecar: the running sidecar's Brain, for workflow tasks
  --instructions TEXT     the system prompt, instead of the default one
  --instructions-file F   the same, read from a file
  --ca-file FILE          with --sidecar: connect over TLS, trusting this CA (PEM; a self-signed
                          sidecar's own certificate)`;
