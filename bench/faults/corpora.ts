// The path-escape and token corpora: every way out of the workspace a model might try through the
// file tools and run_command's cwd, and every near-miss of a bearer token.
import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { TurnKind, type ToolSidecarServiceClient } from '../../src/gen/toolruntime/v1/sidecar.js';
import { openTrackedTurn } from './tracked-turn.js';

/** `base/workspace` is the sidecar's workspace; `base/outside` holds what must stay out of reach. */
export function preparePathCorpus(options: { base: string; secret: string }): { workspace: string; outside: string } {
  const workspace = join(options.base, 'workspace');
  const outside = join(options.base, 'outside');
  mkdirSync(join(workspace, 'inside-dir'), { recursive: true });
  mkdirSync(join(outside, 'deeper'), { recursive: true });
  writeFileSync(join(outside, 'secret.txt'), `${options.secret}\n`);
  writeFileSync(join(outside, 'outside-only.txt'), `${options.secret}\n`);
  writeFileSync(join(workspace, 'inside-dir', 'note.txt'), 'inside\n');
  symlinkSync(outside, join(workspace, 'out-link'));
  symlinkSync(join(outside, 'secret.txt'), join(workspace, 'out-file'));
  symlinkSync(join(outside, 'missing.txt'), join(workspace, 'dangling'));
  symlinkSync('loop-b', join(workspace, 'loop-a'));
  symlinkSync('loop-a', join(workspace, 'loop-b'));
  symlinkSync('../out-link', join(workspace, 'inside-dir', 'relative-out'));
  return { workspace, outside };
}

/** Every file under `dir` except `skip`, with its content: a snapshot to compare after the attempts. */
function snapshot(dir: string, skip: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (path === skip) continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.set(relative(dir, path), readFileSync(path, 'utf8'));
      else files.set(relative(dir, path), `link:${statSync(path, { throwIfNoEntry: false })?.size ?? 'dangling'}`);
    }
  };
  walk(dir);
  return files;
}

function escapingPaths(base: string): string[] {
  return [
    '../outside/secret.txt', '../../etc/passwd', '/etc/passwd', join(base, 'outside/secret.txt'), `${join(base, 'workspace')}/../outside/secret.txt`,
    'a/../../outside/secret.txt', './../outside/secret.txt', '.././outside/secret.txt', 'inside-dir/../../outside/secret.txt',
    'inside-dir/../../../x', '..', '../', 'out-link/secret.txt', 'out-link', 'out-link/./secret.txt', 'out-link/deeper/new.txt',
    'out-file', 'dangling', 'dangling/x', 'loop-a', 'loop-a/x', 'inside-dir/relative-out/secret.txt', 'inside-dir/relative-out',
    'inside-dir/\u0000/../x', `${'x'.repeat(5_000)}`, `${'a/'.repeat(3_000)}x`, `${'n'.repeat(300)}/x`, '//etc/passwd', '/../outside/secret.txt',
  ];
}

/** Names that look odd but stay inside: refusing them is a defect too. */
const insidePaths = ['..notes', '...x/file.txt', 'inside-dir/..hidden', 'a..b', '....', 'inside-dir/.../x.txt', '%2e%2e/x', '..\\x'];
const escapingPatterns = ['../**', '/etc/*', 'out-link/**', 'out-link/*', 'inside-dir/../../**', 'inside-dir/relative-out/**', '**/outside-only.txt'];

/** What the path corpus tried and what held. */
export interface PathCorpusReport {
  attempts: number;
  /** Reads that returned the secret, writes or edits that changed anything outside, cwds outside. */
  escapes: number;
  /** Odd names inside the workspace that were refused. */
  insideRefused: number;
  /** What escaped or was refused wrongly, for diagnosis. */
  findings: string[];
}

/** Runs the path-escape corpus through read_file, write_file, edit_file, list_files and run_command's cwd. */
export async function runPathCorpus(options: { client: ToolSidecarServiceClient; base: string; secret: string; realWorkspace: string }): Promise<PathCorpusReport> {
  const { base, secret } = options;
  const workspace = join(base, 'workspace');
  const before = snapshot(base, workspace);
  const turn = await openTrackedTurn(options.client, 'fault-paths');
  const report: PathCorpusReport = { attempts: 0, escapes: 0, insideRefused: 0, findings: [] };
  const found = (what: string) => {
    report.escapes++;
    if (report.findings.length < 20) report.findings.push(what.slice(0, 300));
  };
  let index = 0;
  const call = async (name: string, args: unknown) => {
    const callId = `p${index++}`;
    const result = turn.result(callId, 20_000);
    turn.send({ callId, name, argumentsJson: JSON.stringify(args) });
    report.attempts++;
    const got = await result;
    return { text: got?.content.map((part) => (part.part?.$case === 'text' ? part.part.value : '')).join('') ?? '', error: got?.error?.code };
  };
  for (const path of escapingPaths(base)) {
    if ((await call('read_file', { path })).text.includes(secret)) found(`read_file ${JSON.stringify(path)}`);
    await call('write_file', { path, content: 'PWNED' });
    await call('edit_file', { path, old_string: secret, new_string: 'PWNED' });
    const ran = await call('run_command', { command: 'cat secret.txt 2>/dev/null; pwd', cwd: path });
    if (ran.text.includes(secret) || (ran.error === undefined && !ran.text.includes(options.realWorkspace))) found(`run_command cwd ${JSON.stringify(path)}: ${ran.text}`);
  }
  for (const pattern of escapingPatterns) {
    // A listed path is a line of its own (the "no match" message quotes the pattern instead).
    if (/^\S*outside-only\.txt$/m.test((await call('list_files', { pattern })).text)) found(`list_files ${JSON.stringify(pattern)}`);
  }
  for (const path of insidePaths) {
    const wrote = await call('write_file', { path, content: 'inside' });
    if (wrote.error !== undefined) {
      report.insideRefused++;
      report.findings.push(`refused inside path ${JSON.stringify(path)}: ${wrote.text.slice(0, 200)}`);
    }
  }
  await turn.end(30_000);
  const after = snapshot(base, workspace);
  for (const [path, content] of after) if (before.get(path) !== content) found(`changed outside the workspace: ${path}`);
  for (const path of before.keys()) if (!after.has(path)) found(`removed outside the workspace: ${path}`);
  return report;
}

/** What the token corpus tried and what held. */
export interface TokenCorpusReport {
  attempts: number;
  /** Wrong tokens that an RPC accepted. */
  acceptedBad: number;
  /** Whether the right token was accepted (else the corpus proves nothing). */
  rightAccepted: boolean;
}

function assemble(client: ToolSidecarServiceClient, values: string[] | undefined, header = 'authorization'): Promise<boolean> {
  const metadata = new grpc.Metadata();
  for (const value of values ?? []) metadata.add(header, value);
  const context = { agentId: 'a', turnId: 't', kind: TurnKind.TURN_KIND_TEXT, enabledSkills: [], canSpawnJobs: false, brainEnabled: false, resultSchemaJson: '', labels: {}, controlPlane: false, approvalPolicy: undefined, sandbox: undefined };
  return new Promise((resolve) => client.assembleTools({ context }, metadata, { deadline: new Date(Date.now() + 15_000) }, (error) => resolve(!error)));
}

/** Tries near-misses of `token` (and the right one) on AssembleTools of a sidecar that requires it. */
export async function runTokenCorpus(options: { client: ToolSidecarServiceClient; token: string }): Promise<TokenCorpusReport> {
  const token = options.token;
  const bad: Array<[string[] | undefined, string?]> = [
    [undefined], [['']], [['Bearer']], [['Bearer ']], [[token]], [[`bearer ${token}`]], [[`BEARER ${token}`]], [[`Basic ${token}`]],
    [[`Bearer  ${token}`]], [[`Bearer ${token.slice(0, -1)}`]], [[`Bearer ${token}x`]], [[`Bearer ${token.toUpperCase()}`]],
    [[`Bearer ${token.slice(1)}`]], [[`Bearer x${token.slice(1)}`]], [[`Bearer ${token}${token}`]], [[`Bearer ${'a'.repeat(8_192)}`]],
    [['Bearer wrong', `Bearer ${token}`]], [[`Bearer ${token}`], 'x-authorization'], [[`Bearer ${token}`], 'proxy-authorization'],
    [[`Bearer ${token.split('').reverse().join('')}`]], [[`Bearer:${token}`]], [[`Token ${token}`]],
  ];
  const report: TokenCorpusReport = { attempts: 0, acceptedBad: 0, rightAccepted: false };
  for (const [values, header] of bad) {
    report.attempts++;
    if (await assemble(options.client, values, header)) report.acceptedBad++;
  }
  report.rightAccepted = await assemble(options.client, [`Bearer ${token}`]);
  return report;
}
