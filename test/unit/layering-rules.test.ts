// Proves the layering rules bite: a small tree shaped like the project (src/, sidecar/, controller/)
// passes `npm run lint:deps` as the project runs it, and each planted violation makes it fail with
// the rule's name and its reason. Runs the real dependency-cruiser on real files in a temp folder.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runToExit } from '../fixtures/run-to-exit.js';

const root = resolve(import.meta.dirname, '../..');
const bin = join(root, 'node_modules', '.bin');
const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['lint:deps'];
const rules = (createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as { forbidden: { name: string; severity: string; comment?: string }[] }).forbidden;

/** A tree that keeps every rule, including each rule's allowed exceptions. */
const CLEAN: Record<string, string> = {
  'src/index.ts': "export { errorMessage } from './errors.js';\n",
  'src/errors.ts': 'export const errorMessage = (error: unknown) => String(error);\n',
  'src/gen/toolruntime/v1/control_plane.ts': 'export interface ControlRequest { id: string }\n',
  'src/gen/toolruntime/v1/sidecar.ts': "import * as grpc from '@grpc/grpc-js';\nexport const service = grpc;\n",
  'src/grpc-server/listen-address.ts': "import { errorMessage } from '../errors.js';\nexport const listen = errorMessage;\n",
  'sidecar/server.ts': "import { listen } from '../src/grpc-server/listen-address.js';\nimport { service } from './grpc/turn-handler.js';\nimport { tools } from './categories/todo.js';\nimport type { SidecarConfig } from './sidecar-config.js';\nexport const server = (config: SidecarConfig) => [listen, service, tools, config];\n",
  'sidecar/sidecar-config.ts': "import type { WebProfiles } from './categories/web/web-profiles.js';\nimport type { SidecarLimits } from './sidecar-limits.js';\nexport interface SidecarConfig extends WebProfiles { limits: SidecarLimits }\n",
  'sidecar/sidecar-limits.ts': 'export interface SidecarLimits { maxMessageBytes: number }\n',
  'sidecar/categories/web/web-profiles.ts': 'export interface WebProfiles { userAgent?: string }\n',
  'sidecar/grpc/turn-handler.ts': "import * as grpc from '@grpc/grpc-js';\nimport { service as generated } from '../../src/gen/toolruntime/v1/sidecar.js';\nexport const service = [grpc, generated];\n",
  'sidecar/categories/todo.ts': "import { errorMessage } from '../../src/index.js';\nimport type { ControlRequest } from './control/control-messages.js';\nimport { run } from './computer/sandbox/start-process.js';\nexport const tools = (request: ControlRequest) => [errorMessage, run, request];\n",
  'sidecar/categories/control/control-messages.ts': "export type { ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';\n",
  'sidecar/categories/computer/sandbox/start-process.ts': "import { spawn } from 'node:child_process';\nexport const run = spawn;\n",
  'sidecar/categories/web/process-handle.ts': "import type { ChildProcess } from 'node:child_process';\nexport type Handle = ChildProcess;\n",
  'sidecar/turn/turn-session.ts': "import type { Call } from './turn-event.js';\nimport type { SidecarLimits } from '../sidecar-limits.js';\nexport interface Session { calls: Call[]; limits: SidecarLimits }\n",
  'sidecar/turn/turn-event.ts': 'export interface Call { id: string }\n',
  'controller/main.ts': "import { listen } from '../src/grpc-server/listen-address.js';\nimport type { ControlRequest } from '../src/gen/toolruntime/v1/control_plane.js';\nimport { spawn } from 'node:child_process';\nimport { runCli } from './cli/cli.js';\nexport const main = (request: ControlRequest) => [listen, spawn, request, runCli];\n",
  'controller/control-plane-main.ts': "import { serve } from './control-plane/cli/serve.js';\nexport const main = serve;\n",
  'controller/cli/cli-io.ts': 'export interface CliIo { argv: string[] }\n',
  'controller/cli/cli.ts': "import type { CliIo } from './cli-io.js';\nimport { serve } from '../control-plane/cli/serve.js';\nexport const runCli = (io: CliIo) => [serve, io];\n",
  'controller/control-plane/cli/serve.ts': "import type { CliIo } from '../../cli/cli-io.js';\nimport { createServer } from '../grpc/server.js';\nimport { openStore } from '../store/open-control-plane-store.js';\nimport { runJobs } from '../domain/job-runner.js';\nexport const serve = (io: CliIo) => [io, createServer, openStore, runJobs];\n",
  'controller/control-plane/grpc/server.ts': "import * as grpc from '@grpc/grpc-js';\nimport type { ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';\nimport { isControlPlaneError } from '../domain/control-plane-error.js';\nimport type { Store } from '../domain/control-plane-store.js';\nexport const createServer = (request: ControlRequest, store: Store) => [grpc, isControlPlaneError, request, store];\n",
  'controller/control-plane/domain/control-plane-error.ts': "import { errorMessage } from '../../../src/errors.js';\nexport const isControlPlaneError = errorMessage;\n",
  'controller/control-plane/domain/control-plane-store.ts': 'export interface Store { id: string }\n',
  'controller/control-plane/domain/job-runner.ts': "import type { Store } from './control-plane-store.js';\nimport { isControlPlaneError } from './control-plane-error.js';\nexport const runJobs = (store: Store) => [store, isControlPlaneError];\n",
  'controller/control-plane/store/open-control-plane-store.ts': "import { openSqlite } from './sqlite/open-sqlite-store.js';\nimport { openPostgres } from './postgres/open-postgres-store.js';\nexport const openStore = () => [openSqlite, openPostgres];\n",
  'controller/control-plane/store/sql-job-store.ts': "import { isControlPlaneError } from '../domain/control-plane-error.js';\nimport type { Store } from '../domain/control-plane-store.js';\nimport { errorMessage } from '../../../src/errors.js';\nexport const jobStore = (store: Store) => [store, isControlPlaneError, errorMessage];\n",
  'controller/control-plane/store/sqlite/open-sqlite-store.ts': "import Database from 'better-sqlite3';\nimport { jobStore } from '../sql-job-store.js';\nexport const openSqlite = () => [Database, jobStore];\n",
  'controller/control-plane/store/postgres/open-postgres-store.ts': "import { jobStore } from '../sql-job-store.js';\nexport const openPostgres = () => [jobStore];\n",
  'node_modules/better-sqlite3/package.json': '{ "name": "better-sqlite3", "version": "1.0.0", "main": "index.js" }\n',
  'node_modules/better-sqlite3/index.js': 'module.exports = {};\n',
  'node_modules/@grpc/grpc-js/package.json': '{ "name": "@grpc/grpc-js", "version": "1.0.0", "main": "index.js" }\n',
  'node_modules/@grpc/grpc-js/index.js': 'module.exports = {};\n',
  'tsconfig.json': '{ "compilerOptions": { "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true, "noEmit": true }, "include": ["src", "sidecar", "controller"] }\n',
};

/**
 * Per rule, files to add (or replace) in the clean tree so that it breaks that rule, and the files a
 * report of the violation starts from. Paths differ between plantings, so all go in one tree.
 */
const PLANTED: { rule: string; what: string; from: string[]; files: Record<string, string> }[] = [
  { rule: 'library-knows-no-process', what: 'the library imports the sidecar', from: ['src/tool/define-a.ts'], files: { 'src/tool/define-a.ts': "import { server } from '../../sidecar/server.js';\nexport const define = server;\n" } },
  { rule: 'library-knows-no-process', what: 'the library imports the controller', from: ['src/tool/define-b.ts'], files: { 'src/tool/define-b.ts': "import type { main } from '../../controller/main.js';\nexport type Define = typeof main;\n" } },
  { rule: 'public-api-exports-no-server', what: 'the public API exports a gRPC server helper', from: ['src/index.ts'], files: { 'src/index.ts': "export { errorMessage } from './errors.js';\nexport { listen } from './grpc-server/listen-address.js';\n" } },
  { rule: 'controller-not-into-sidecar', what: 'the controller imports a sidecar module', from: ['controller/serve.ts'], files: { 'controller/serve.ts': "import { service } from '../sidecar/grpc/turn-handler.js';\nexport const serve = service;\n" } },
  { rule: 'sidecar-not-into-controller', what: 'the sidecar imports a controller module', from: ['sidecar/cli.ts'], files: { 'sidecar/cli.ts': "import type { main } from '../controller/main.js';\nexport type Cli = typeof main;\n" } },
  { rule: 'tools-see-no-transport', what: 'a tool imports generated code', from: ['sidecar/categories/web-a.ts'], files: { 'sidecar/categories/web-a.ts': "import type { ControlRequest } from '../../src/gen/toolruntime/v1/control_plane.js';\nexport type Web = ControlRequest;\n" } },
  { rule: 'tools-see-no-transport', what: 'a tool imports grpc-js', from: ['sidecar/categories/web-b.ts'], files: { 'sidecar/categories/web-b.ts': "import * as grpc from '@grpc/grpc-js';\nexport const web = grpc;\n" } },
  { rule: 'tools-see-no-transport', what: "a tool imports the sidecar's gRPC layer", from: ['sidecar/categories/web-c.ts'], files: { 'sidecar/categories/web-c.ts': "import { service } from '../grpc/turn-handler.js';\nexport const web = service;\n" } },
  { rule: 'control-messages-only-control-plane', what: 'the control-messages door opens on the sidecar protocol', from: ['sidecar/categories/control/control-messages.ts'], files: { 'sidecar/categories/control/control-messages.ts': "export type { ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';\nexport { service } from '../../../src/gen/toolruntime/v1/sidecar.js';\n" } },
  { rule: 'tools-start-no-process', what: 'a tool calls child_process', from: ['sidecar/categories/web/fetch-page.ts'], files: { 'sidecar/categories/web/fetch-page.ts': "import { execFile } from 'node:child_process';\nexport const fetchPage = execFile;\n" } },
  { rule: 'tools-start-no-process', what: 'a computer tool calls child_process beside the sandbox', from: ['sidecar/categories/computer/run-process.ts'], files: { 'sidecar/categories/computer/run-process.ts': "import { spawn } from 'node:child_process';\nexport const runProcess = spawn;\n" } },
  { rule: 'sandbox-knows-no-tool', what: 'the sandbox reads a category\'s configuration', from: ['sidecar/categories/computer/sandbox/policy-of.ts'], files: { 'sidecar/categories/computer/sandbox/policy-of.ts': "import type { CategoryConfig } from '../../category-config.js';\nexport type PolicyOf = (config: CategoryConfig) => string;\n", 'sidecar/categories/category-config.ts': 'export interface CategoryConfig { workspace: string }\n' } },
  { rule: 'sandbox-knows-no-tool', what: 'the sandbox imports a tool of another category', from: ['sidecar/categories/computer/sandbox/proxy.ts'], files: { 'sidecar/categories/computer/sandbox/proxy.ts': "import { fetchGuard } from '../../web/fetch-guard.js';\nexport const proxy = fetchGuard;\n", 'sidecar/categories/web/fetch-guard.ts': 'export const fetchGuard = 1;\n' } },
  { rule: 'tools-start-no-process', what: 'the sidecar outside the process runner calls child_process', from: ['sidecar/turn/run-hook.ts'], files: { 'sidecar/turn/run-hook.ts': "import { spawn } from 'child_process';\nexport const runHook = spawn;\n" } },
  { rule: 'control-plane-domain-knows-no-transport', what: 'the control-plane domain names a generated type', from: ['controller/control-plane/domain/runner-a.ts'], files: { 'controller/control-plane/domain/runner-a.ts': "import type { ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';\nexport type Runner = ControlRequest;\n" } },
  { rule: 'control-plane-domain-knows-no-transport', what: 'the control-plane domain imports grpc-js', from: ['controller/control-plane/domain/runner-b.ts'], files: { 'controller/control-plane/domain/runner-b.ts': "import * as grpc from '@grpc/grpc-js';\nexport const runner = grpc;\n" } },
  { rule: 'control-plane-domain-knows-no-transport', what: "the control-plane domain imports the gRPC layer", from: ['controller/control-plane/domain/runner-c.ts'], files: { 'controller/control-plane/domain/runner-c.ts': "import { createServer } from '../grpc/server.js';\nexport const runner = createServer;\n" } },
  { rule: 'control-plane-store-below-domain', what: 'the store imports the gRPC layer', from: ['controller/control-plane/store/store-a.ts'], files: { 'controller/control-plane/store/store-a.ts': "import { createServer } from '../grpc/server.js';\nexport const store = createServer;\n" } },
  { rule: 'control-plane-store-below-domain', what: 'the store names a generated type', from: ['controller/control-plane/store/store-b.ts'], files: { 'controller/control-plane/store/store-b.ts': "import type { ControlRequest } from '../../../src/gen/toolruntime/v1/control_plane.js';\nexport type Row = ControlRequest;\n" } },
  { rule: 'control-plane-domain-owns-its-store-port', what: 'the control-plane domain imports the store', from: ['controller/control-plane/domain/runner-d.ts'], files: { 'controller/control-plane/domain/runner-d.ts': "import { jobStore } from '../store/sql-job-store.js';\nexport const runner = jobStore;\n" } },
  { rule: 'store-written-once', what: "the store's shared logic imports a database driver", from: ['controller/control-plane/store/sql-store-a.ts'], files: { 'controller/control-plane/store/sql-store-a.ts': "import Database from 'better-sqlite3';\nexport const store = Database;\n" } },
  { rule: 'store-written-once', what: "the store's shared logic imports a dialect's folder", from: ['controller/control-plane/store/sql-store-b.ts'], files: { 'controller/control-plane/store/sql-store-b.ts': "import { openPostgres } from './postgres/open-postgres-store.js';\nexport const store = openPostgres;\n" } },
  { rule: 'store-dialects-apart', what: "SQLite's part of the store imports PostgreSQL's", from: ['controller/control-plane/store/sqlite/lease-a.ts'], files: { 'controller/control-plane/store/sqlite/lease-a.ts': "import { openPostgres } from '../postgres/open-postgres-store.js';\nexport const lease = openPostgres;\n" } },
  { rule: 'cli-only-from-entries', what: "the control plane's gRPC layer imports a CLI command", from: ['controller/control-plane/grpc/handler-a.ts'], files: { 'controller/control-plane/grpc/handler-a.ts': "import { serve } from '../cli/serve.js';\nexport const handler = serve;\n" } },
  { rule: 'cli-only-from-entries', what: "the controller's loop imports the controller CLI", from: ['controller/loop/run-turn.ts'], files: { 'controller/loop/run-turn.ts': "import type { CliIo } from '../cli/cli-io.js';\nexport type RunTurn = CliIo;\n" } },
  { rule: 'composed-config-only-at-start-up', what: 'a category imports the composed configuration', from: ['sidecar/categories/web-d.ts'], files: { 'sidecar/categories/web-d.ts': "import type { SidecarConfig } from '../sidecar-config.js';\nexport type Web = SidecarConfig;\n" } },
  { rule: 'composed-config-only-at-start-up', what: 'the turn imports the composed configuration', from: ['sidecar/turn/turn-limits.ts'], files: { 'sidecar/turn/turn-limits.ts': "import type { SidecarConfig } from '../sidecar-config.js';\nexport type Limits = SidecarConfig['limits'];\n" } },
  { rule: 'no-circular', what: 'a circle through type-only imports', from: ['sidecar/turn/turn-event.ts', 'sidecar/turn/turn-session.ts'], files: { 'sidecar/turn/turn-event.ts': "import type { Session } from './turn-session.js';\nexport interface Call { id: string; session: Session }\n" } },
];

let folders: string[] = [];
afterEach(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  folders = [];
});

/** Writes the clean tree plus `planted` to a new temp folder and runs `npm run lint:deps`'s command in it. */
async function lintTree(planted: Record<string, string>) {
  const folder = mkdtempSync(join(tmpdir(), 'layering-rules-'));
  folders.push(folder);
  for (const [path, text] of Object.entries({ ...CLEAN, ...planted })) {
    mkdirSync(dirname(join(folder, path)), { recursive: true });
    writeFileSync(join(folder, path), text);
  }
  copyFileSync(join(root, '.dependency-cruiser.cjs'), join(folder, '.dependency-cruiser.cjs'));
  const exit = await runToExit('sh', ['-c', script!], { cwd: folder, env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` } });
  const output = exit.stdout + exit.stderr;
  /** Each reported violation: its rule and the module it starts from. */
  const violations = [...output.matchAll(/error ([a-z-]+): (\S+) →/g)].map((match) => ({ rule: match[1]!, from: match[2]! }));
  return { code: exit.code, output, flat: output.replace(/\s+/g, ' '), violations };
}

describe('the layering rules (npm run lint:deps)', () => {
  it('are each an error, explained, and each has a planted violation below', () => {
    expect(script).toMatch(/^depcruise /);
    expect(rules.length).toBeGreaterThanOrEqual(15);
    for (const rule of rules) {
      expect(rule.severity, `rule ${rule.name} fails the check`).toBe('error');
      expect(rule.comment?.length ?? 0, `rule ${rule.name} says why`).toBeGreaterThan(40);
      expect(PLANTED.map((planting) => planting.rule), `rule ${rule.name} has a planted violation`).toContain(rule.name);
    }
  });

  it('pass the clean tree, its allowed exceptions included', async () => {
    const { code, output } = await lintTree({});
    expect(output).toContain('no dependency violations found');
    expect(code).toBe(0);
  });

  it('fail on each planted violation, naming its rule and saying why', async () => {
    const { code, flat, violations } = await lintTree(Object.assign({}, ...PLANTED.map((planting) => planting.files)));
    expect(code).not.toBe(0);
    for (const planting of PLANTED) {
      const found = violations.some((violation) => violation.rule === planting.rule && planting.from.includes(violation.from));
      expect(found, `${planting.what}: reported as ${planting.rule}`).toBe(true);
    }
    // Nothing else is reported: each planting breaks its rule only.
    for (const violation of violations) {
      const planted = PLANTED.some((planting) => planting.rule === violation.rule && planting.from.includes(violation.from));
      expect(planted, `unexpected ${violation.rule} from ${violation.from}`).toBe(true);
    }
    for (const rule of rules) expect(flat, `the reason of ${rule.name} is printed`).toContain(rule.comment!.replace(/\s+/g, ' ').slice(0, 60));
  });
});
