// A process the model's commands start, on the controller's own machine, against the control plane:
// a real `controller serve --console` child (no --token-file: it generates its tokens), agent-a's
// sidecar spawned by serve as another user (agents file "user"), no sandbox. An approved
// run_command of agent-a starts test/fixtures/control-plane-intruder.ts, which tries gRPC, the
// console's HTTP API, the token files, the store and agent-b's sidecar. It must not approve
// agent-a's pending call, start a job for agent-b, or cancel agent-b's workflow, whichever way.
// (Without another user or the sandbox, a same-user command can read the token file: see
// docs/security.md. This suite tests the arrangement that holds without the sandbox.)
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApprovalsCommand } from '../../../controller/control-plane/cli/approvals-command.js';
import { controlTokenPath } from '../../../controller/control-plane/grpc/control-token.js';
import { JobState, WorkflowRunState } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { startScriptedAgentModel, type ScriptedAgentModel } from '../../fakes/scripted-agent-model.js';
import { controlPlaneClient, until } from '../../fixtures/control-plane-client.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { testSandboxMode } from '../../fixtures/test-sandbox.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const AGENT_UID = 65534; // nobody: owns none of the controller's files
const needs = requireSystemTools({
  suite: 'the model-process control test (test/integration/control-plane/model-process-control.test.ts)',
  // Starting a sidecar as another user needs root; that user must be able to read this checkout.
  tools: [{ name: `root, and a checkout uid ${AGENT_UID} can read`, command: ['setpriv', `--reuid=${AGENT_UID}`, `--regid=${AGENT_UID}`, '--clear-groups', 'test', '-r', join(root, 'sidecar/main.ts')] }],
  aptPackages: ['util-linux'],
});

let dir: string;
let home: string;
let dataDir: string;
let model: ScriptedAgentModel;
let serve: StartedSidecar;
let operator: ReturnType<typeof controlPlaneClient>;
let consoleUrl: string;
let savedHome: string | undefined;

/** Runs a controller command in process, as `npm run controller -- ...` would (HOME is the test's: see beforeAll). */
async function command(run: (io: { argv: string[]; env: NodeJS.ProcessEnv; stdout: PassThrough; stderr: PassThrough; signal: AbortSignal }) => Promise<number>, argv: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const code = await run({ argv, env: { HOME: home }, stdout, stderr, signal: AbortSignal.timeout(30_000) });
  return { code, stdout: out, stderr: err };
}

describe('a process started by the model\'s commands, against the control plane of its machine', needs, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'model-process-'));
    chmodSync(dir, 0o755); // agent-a's user must reach its workspace under it
    home = join(dir, 'home');
    mkdirSync(home, { mode: 0o700 });
    // The in-process operator commands find the default data folder through HOME, as on a desktop.
    savedHome = process.env.HOME;
    process.env.HOME = home;
    // No --data-dir anywhere: serve and the operator's commands use the default under HOME.
    dataDir = join(home, '.local', 'state', 'tools-runtime', 'controller');
    for (const name of ['ws-a', 'state-a']) {
      mkdirSync(join(dir, name));
      chownSync(join(dir, name), AGENT_UID, AGENT_UID);
    }
    mkdirSync(join(dir, 'ws-b'));
    const agents = join(dir, 'agents.json');
    writeFileSync(
      agents,
      JSON.stringify({
        'agent-a': { workspace: join(dir, 'ws-a'), stateDir: join(dir, 'state-a'), user: String(AGENT_UID), sandbox: 'off' },
        'agent-b': { workspace: join(dir, 'ws-b'), stateDir: join(dir, 'state-b'), sandbox: testSandboxMode() },
      }),
    );
    model = await startScriptedAgentModel();
    const env = { ...process.env, HOME: home, OPENAI_API_KEY: '', OPENAI_BASE_URL: '' };
    serve = await startSidecar({
      entry: 'controller/control-plane-main.ts',
      args: ['serve', '--listen', '127.0.0.1:0', '--agents', agents, '--base-url', model.baseURL, '--console', '127.0.0.1:0'],
      env,
      timeoutMs: 90_000,
    });
    const logged = await until(async () => serve.stderr(), (text) => text.includes('console serving'), 'the console line', 30_000);
    consoleUrl = /"url":"(http:[^"#]+)/.exec(logged.split('\n').find((line) => line.includes('console serving'))!)![1]!;
    // The operator, as `approvals` finds its token: under the default data folder.
    operator = controlPlaneClient(serve.address, readFileSync(controlTokenPath({ dataDir, kind: 'control-plane', address: serve.address }), 'utf8').trim());
  }, 120_000);

  afterAll(async () => {
    operator?.close();
    await serve?.stop('SIGTERM');
    await model?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (savedHome === undefined) delete process.env.HOME;
    else process.env.HOME = savedHome;
  }, 60_000);

  it('keeps the data folder and the generated tokens private to the operator', () => {
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    const tokenFile = controlTokenPath({ dataDir, kind: 'control-plane', address: serve.address });
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(tokenFile).uid).toBe(process.getuid!());
  });

  it('can neither approve a pending call, start a job for another agent, nor cancel another agent\'s workflow', async () => {
    // agent-b's workflow, held running by a task turn that never ends.
    const schema = JSON.stringify({ type: 'object', properties: { task: { type: 'string' } }, required: ['task'], additionalProperties: false });
    const run = (await operator.startWorkflow({ agentId: 'agent-b', definition: { name: 'b-flow', maxParallel: 1, tasks: [{ id: 't1', prompt: 'b-task HANG-FOREVER', resultSchemaJson: schema, dependsOn: [], maxAttempts: 1 }] } })).run!;
    // agent-a's own destructive call, waiting for an operator.
    const owned = (await operator.startJob({ agentId: 'agent-a', prompt: `owned-write\nCALL write_file ${JSON.stringify({ path: 'owned.txt', content: 'x' })}` })).job!;
    const pending = await until(
      async () => (await command((io) => runApprovalsCommand(['list', '--json', '--address', serve.address], io), [])).stdout,
      (text) => text.includes('owned.txt'),
      'agent-a\'s pending write',
    );
    const pendingId = (JSON.parse(pending.trim().split('\n').find((line) => line.includes('owned.txt'))!) as { approval_id: string }).approval_id;

    // The intruder: one run_command of agent-a that an operator approves (one is enough).
    const otherSidecar = /"msg":"sidecar started".*?"agentId":"agent-b".*?"address":"([^"]+)"/.exec(serve.stderr())![1]!;
    const report = join(dir, 'ws-a', 'report.json');
    const plan = {
      controlPlane: serve.address,
      console: consoleUrl,
      dataDir,
      tokenFiles: [controlTokenPath({ dataDir, kind: 'control-plane', address: serve.address }), controlTokenPath({ dataDir, kind: 'console', address: new URL(consoleUrl).host })],
      storeFile: join(dataDir, 'control-plane.sqlite'),
      otherSidecar,
      pendingApprovalId: pendingId,
      otherAgentId: 'agent-b',
      otherRunId: run.runId,
    };
    const shell = `${root}node_modules/.bin/tsx ${root}test/fixtures/control-plane-intruder.ts '${JSON.stringify(plan)}' ${report}`;
    const intruder = (await operator.startJob({ agentId: 'agent-a', prompt: `intruder\nCALL run_command ${JSON.stringify({ command: shell, timeout_ms: 120_000 })}` })).job!;
    const intruderApproval = await until(
      async () => (await command((io) => runApprovalsCommand(['list', '--json', '--address', serve.address], io), [])).stdout,
      (text) => text.includes('control-plane-intruder'),
      'the intruder\'s approval',
    );
    const intruderId = (JSON.parse(intruderApproval.trim().split('\n').find((line) => line.includes('control-plane-intruder'))!) as { approval_id: string }).approval_id;
    const approved = await command((io) => runApprovalsCommand(['approve', intruderId, '--address', serve.address], io), []);
    expect(approved.code, approved.stderr).toBe(0);
    await until(() => operator.showJob({ agentId: 'agent-a', jobId: intruder.jobId }), (reply) => reply.job!.state !== JobState.JOB_STATE_RUNNING && reply.job!.state !== JobState.JOB_STATE_QUEUED, 'the intruder\'s job', 120_000);
    expect(existsSync(report), (await operator.showJob({ agentId: 'agent-a', jobId: intruder.jobId })).job!.finalText).toBe(true);
    const seen = JSON.parse(readFileSync(report, 'utf8')) as Record<string, { ok: boolean; code?: unknown; value?: string }>;

    // What the intruder met at each door.
    expect(seen.uid).toBe(AGENT_UID);
    for (const file of ['readTokenFile0', 'readTokenFile1', 'listDataDir', 'openStore']) expect([file, seen[file]]).toEqual([file, { ok: false, code: 'EACCES' }]);
    for (const rpc of ['grpcListApprovals', 'grpcStartJob', 'grpcCancelWorkflow']) {
      for (const label of ['NoToken', 'GuessedToken']) expect([rpc + label, seen[rpc + label]]).toEqual([rpc + label, { ok: false, code: 16 }]); // UNAUTHENTICATED
    }
    expect(seen.grpcDecideApprovalNoToken).toEqual({ ok: false, code: 16 });
    for (const route of ['consoleState', 'consoleApprove', 'consoleApproveGuessed', 'consoleCancelWorkflow']) expect([route, seen[route]]).toEqual([route, { ok: true, value: '401' }]);
    expect(seen.otherSidecarTurn!.ok).toBe(false);

    // And what the operator sees: nothing changed.
    const approvals = await command((io) => runApprovalsCommand(['list', '--all', '--json', '--address', serve.address], io), []);
    const stillPending = approvals.stdout.trim().split('\n').map((line) => JSON.parse(line) as { approval_id: string; state: string }).find((entry) => entry.approval_id === pendingId);
    expect(stillPending?.state).toBe('pending');
    expect((await operator.listJobs({ agentId: 'agent-b' })).jobs.filter((job) => job.prompt.includes('intruder'))).toEqual([]);
    expect((await operator.showWorkflow({ agentId: 'agent-b', runId: run.runId })).run!.state).toBe(WorkflowRunState.WORKFLOW_RUN_STATE_RUNNING);
    expect(existsSync(join(dir, 'ws-a', 'owned.txt'))).toBe(false);
    expect((await operator.showJob({ agentId: 'agent-a', jobId: owned.jobId })).job!.state).toBe(JobState.JOB_STATE_RUNNING);
  }, 300_000);

  it('lets the operator on the machine use `approvals list` and `workflow list` with no token flags', async () => {
    // As `npm run controller -- ...` runs them: real child processes, HOME the operator's. Only
    // --address, because the test's serve listens on a free port rather than 127.0.0.1:7400.
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', `${root}controller/control-plane-main.ts`, ...args], { cwd: root, env: { ...process.env, HOME: home }, encoding: 'utf8', timeout: 60_000 });
    const listed = cli('approvals', 'list', '--address', serve.address);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('owned.txt');
    const workflows = cli('workflow', 'list');
    expect(workflows.status, workflows.stderr).toBe(0);
    expect(workflows.stdout).toContain('"name":"b-flow"');
    // A wrong token file is refused, and a missing one is named with both fixes.
    writeFileSync(join(dir, 'wrong.token'), 'not-the-token\n');
    const wrong = await command((io) => runApprovalsCommand(['list', '--address', serve.address, '--token-file', join(dir, 'wrong.token')], io), []);
    expect([wrong.code, wrong.stderr.trim()]).toEqual([1, 'error: the bearer token is wrong']);
    const elsewhere = await command((io) => runApprovalsCommand(['list', '--address', '127.0.0.1:1'], io), []);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(/no token for 127\.0\.0\.1:1: no running server lists that address in .*--data-dir DIR.*--token-file FILE/);
  }, 60_000);
});
