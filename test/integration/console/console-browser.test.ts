// The web console in a real browser: Debian's chromium driven by playwright-core (executablePath,
// no browser download), against a real `controller serve --console` child process with a spawned
// sidecar, real SQLite and gRPC, and the tests' scripted Responses server.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleServer } from '../../../controller/console/console-server.js';
import { TurnFeed } from '../../../controller/console/turn-feed.js';
import { JobState } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { startScriptedAgentModel, type ScriptedAgentModel } from '../../fakes/scripted-agent-model.js';
import { controlPlaneClient, generatedToken, until } from '../../fixtures/control-plane-client.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { testSandboxMode } from '../../fixtures/test-sandbox.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Skips with one line in the run's summary when the browser is absent; CI installs it (.ci/run),
// and there a missing browser fails the run instead.
const needs = requireSystemTools({
  suite: 'the console browser test (test/integration/console/console-browser.test.ts)',
  tools: [{ name: 'chromium', executable: chromiumPath }],
  aptPackages: ['chromium'],
});

const output = fileURLToPath(new URL('../../output/console/', import.meta.url));
let dir: string;
let model: ScriptedAgentModel;
let serve: StartedSidecar;
let consoleUrl: string;
let consoleToken: string;
let browser: Browser;
let page: Page;
let client: ReturnType<typeof controlPlaneClient>;

async function view(name: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(name)}`);
  await page.locator(`#view-${name}`).waitFor({ timeout: 30_000 });
}

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(output, `${name}.png`), fullPage: true });
}

describe('the web console in Chromium', needs, () => {
  beforeAll(async () => {
    mkdirSync(output, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'console-browser-'));
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'README.md'), '# console test\n');
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-a': { workspace, stateDir: join(dir, 'sidecar-state'), sandbox: testSandboxMode() } }));
    model = await startScriptedAgentModel();
    serve = await startSidecar({
      entry: 'controller/control-plane-main.ts',
      args: ['serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--agents', agents, '--base-url', model.baseURL, '--console', '127.0.0.1:0'],
      env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
      timeoutMs: 60_000,
    });
    const logged = await until(async () => serve.stderr(), (text) => /"console serving"/.test(text), 'the console line', 30_000);
    // serve generated its token: the console's address is logged once with it in the fragment.
    const link = /"url":"(http:[^"]+)"/.exec(logged.split('\n').find((line) => line.includes('console serving'))!)![1]!;
    [consoleUrl, consoleToken] = link.split('#token=') as [string, string];
    expect(consoleToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    client = controlPlaneClient(serve.address, generatedToken(join(dir, 'data'), serve.address));
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(link);
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 30_000 });
    // The page moved the token to its storage and out of the address bar.
    expect(page.url()).toBe(consoleUrl);
    expect(await page.evaluate(`localStorage.getItem('console-token')`)).toBe(consoleToken);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    client?.close();
    await serve?.stop('SIGTERM');
    await model?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('shows a running turn\'s call live, approves it from the page, and the turn goes on; tool output with <script> is text', async () => {
    // A marker that a reload would lose: the call must arrive over the live stream.
    await page.evaluate('window.marker = 42');
    await view('turns');
    const command = "printf '%s' '<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">'";
    const todos = { todos: [{ id: 'look', content: 'Look at <b>the</b> workspace', status: 'in_progress' }] };
    const job = (await client.startJob({ agentId: 'agent-a', prompt: `console-live\nCALL todo_write ${JSON.stringify(todos)}\nCALL run_command ${JSON.stringify({ command })}` })).job!;

    // run_command is destructive: serve's default policy holds it for an operator.
    const waiting = page.locator('li.call.call-waiting-for-approval');
    await waiting.waitFor({ timeout: 60_000 });
    expect(await waiting.locator('.tool').textContent()).toBe('run_command');
    expect(await page.evaluate('window.marker')).toBe(42);
    await screenshot('turns-waiting');

    await view('approvals');
    const approval = page.locator('li.approval', { hasText: 'run_command' });
    await approval.waitFor({ timeout: 30_000 });
    expect(await approval.locator('pre').textContent()).toContain('<script>window.pwned=1</script>');
    await screenshot('approvals');
    await approval.locator('button.approve').click();
    await page.locator('li.approval').waitFor({ state: 'detached', timeout: 30_000 });

    await view('turns');
    const done = page.locator('li.call.call-done', { hasText: 'run_command' });
    await done.waitFor({ timeout: 60_000 });
    const shown = await done.locator('pre.output').first().textContent();
    // The first output block is the command's streamed output or the result's text ("exit code 0
    // ...") depending on which the page received first; either way the markup shows as text.
    expect(shown).toContain('<script>window.pwned=1</script><img src=x onerror="window.pwned=2">');
    expect(await page.locator('#view script, #view img').count()).toBe(0);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    await page.locator('.timeline .badge-completed').first().waitFor({ timeout: 30_000 });
    await screenshot('turns');

    const finished = await until(() => client.showJob({ agentId: 'agent-a', jobId: job.jobId }), (reply) => reply.job!.state === JobState.JOB_STATE_SUCCEEDED, 'the approved job');
    expect(finished.job!.finalText).toContain('done: console-live');
    // A reload at the bare address stays signed in (the token is in storage), and the token was
    // written to serve's log once only: the line that printed the address.
    await page.goto(consoleUrl);
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 30_000 });
    expect(serve.stderr().split(consoleToken).length - 1).toBe(1);
  }, 180_000);

  it('shows a workflow run\'s tasks as a graph turning committed, the agents\' health, todos, schedules and jobs', async () => {
    const schema = JSON.stringify({ type: 'object', properties: { task: { type: 'string' } }, required: ['task'], additionalProperties: false });
    // t3's result is long (the scripted model submits its prompt's first line): it must show whole too.
    const long = ' with a result long enough to run over several lines of its box, which must grow to show all of it';
    const task = (id: string, dependsOn: string[] = []) => ({ id, prompt: `console-flow-${id}${id === 't3' ? long : ''}`, resultSchemaJson: schema, dependsOn, maxAttempts: 2 });
    await client.createSchedule({ agentId: 'agent-a', prompt: 'a nightly look', cron: '0 3 * * *', timeZone: 'UTC' });
    await view('workflows');
    const run = (await client.startWorkflow({ agentId: 'agent-a', definition: { name: 'console-flow', maxParallel: 2, tasks: [task('t1'), task('t2', ['t1']), task('t3', ['t1'])] } })).run!;
    for (const id of ['t1', 't2', 't3']) {
      await page.locator(`[data-run="${run.runId}"] [data-task="${id}"][data-state="committed"]`).waitFor({ timeout: 90_000 });
    }
    await page.locator(`[data-run="${run.runId}"][data-state="succeeded"]`).waitFor({ timeout: 30_000 });
    expect(await page.locator(`[data-run="${run.runId}"] [data-task="t2"] .result`).textContent()).toContain('console-flow-t2');
    expect(await page.locator(`[data-run="${run.runId}"] svg line`).count()).toBe(2);
    // Each attempt names the controller runner that claimed it (host:pid:id).
    expect(await page.locator(`[data-run="${run.runId}"] [data-task="t2"]`).textContent()).toMatch(/#1 committed on [^\s:]+:\d+:\w+/);
    expect(await page.locator(`[data-run="${run.runId}"] [data-task="t3"] .result`).textContent()).toContain('must grow to show all of it');
    // Every task box shows all of its content (issue 23 item 9: a fixed height cut the attempt line
    // in half and long results at 28 px): nothing overflows a box, nothing inside is cut, no box
    // lies over another.
    const boxes = await page.locator(`[data-run="${run.runId}"] .task`).evaluateAll((elements) =>
      elements.map((box) => {
        // (In the page: the test's own types have no DOM library.)
        const styleOf = (element: unknown) => (globalThis as unknown as { getComputedStyle(element: unknown): { overflowX: string; overflowY: string } }).getComputedStyle(element);
        const outer = box.getBoundingClientRect();
        const cut = [...box.querySelectorAll('*')]
          .filter((child) => {
            const inner = child.getBoundingClientRect();
            const hides = styleOf(child).overflowY === 'hidden' || styleOf(child).overflowX === 'hidden';
            return inner.bottom > outer.bottom + 0.5 || inner.right > outer.right + 0.5 || (hides && (child.scrollHeight > child.clientHeight + 1 || child.scrollWidth > child.clientWidth + 1));
          })
          .map((child) => child.textContent);
        const overflows = box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1;
        return { task: box.getAttribute('data-task'), overflows, cut, rect: { top: outer.top, bottom: outer.bottom, left: outer.left, right: outer.right } };
      }),
    );
    expect(boxes.map(({ task, overflows, cut }) => ({ task, overflows, cut }))).toEqual(['t1', 't2', 't3'].map((id) => ({ task: id, overflows: false, cut: [] })));
    for (const a of boxes) {
      for (const b of boxes) {
        const overlap = a !== b && a.rect.left < b.rect.right && b.rect.left < a.rect.right && a.rect.top < b.rect.bottom && b.rect.top < a.rect.bottom;
        expect(overlap, `${a.task} and ${b.task} overlap`).toBe(false);
      }
    }
    await screenshot('workflows');
    // The task turns fed the timeline too (workflow task turns, by run, task and attempt).
    await view('turns');
    await page.locator('.turn-list li', { hasText: 'console-flow · t2 #1' }).waitFor({ timeout: 30_000 });

    await view('agents');
    await page.locator('tr[data-agent="agent-a"] .badge-serving').waitFor({ timeout: 30_000 });
    await screenshot('agents');
    await view('schedules');
    await page.locator('tr[data-schedule]', { hasText: 'a nightly look' }).waitFor({ timeout: 30_000 });
    await page.locator('tr[data-job]', { hasText: 'console-live' }).waitFor({ timeout: 30_000 });
    await screenshot('schedules');
    await view('todos');
    expect(await page.locator('[data-agent="agent-a"] li.todo').textContent()).toContain('Look at <b>the</b> workspace');
    await screenshot('todos');

    // Cancel from the page: a job whose model never answers, cancelled through ControlPlaneService's path.
    const hanging = (await client.startJob({ agentId: 'agent-a', prompt: 'console-cancel HANG-FOREVER' })).job!;
    await view('schedules');
    const row = page.locator(`tr[data-job="${hanging.jobId}"]`);
    await row.locator('.badge-running').waitFor({ timeout: 30_000 });
    await row.locator('button.cancel').click();
    await row.locator('.badge-cancelled').waitFor({ timeout: 30_000 });
    const cancelled = await client.showJob({ agentId: 'agent-a', jobId: hanging.jobId });
    expect(cancelled.job!.state).toBe(JobState.JOB_STATE_CANCELLED);
  }, 180_000);

  it('without its token, the page asks for it, then follows the turns live', async () => {
    const feed = new TurnFeed();
    const server = await startConsoleServer({ address: '127.0.0.1:0', token: 'page-token-1234', feed, agents: () => [{ agentId: 'solo' }] });
    const guarded = await browser.newPage();
    try {
      await guarded.goto(`${server.url}#turns`);
      await guarded.locator('#token-form').waitFor({ timeout: 30_000 });
      await guarded.fill('#token', 'page-token-1234');
      await guarded.click('#token-form button');
      await guarded.locator('#status[data-state="live"]').waitFor({ timeout: 30_000 });
      feed.record({ turnId: 'turn-1', agentId: 'solo', kind: 'text', label: 'with a token' }, { type: 'activity-started', callId: 'c1', name: 'list_files', label: 'Listing files' });
      await guarded.locator('li.call.call-running', { hasText: 'Listing files' }).waitFor({ timeout: 30_000 });
    } finally {
      await guarded.close();
      await server.close();
    }
  }, 60_000);

  it('refuses cross-origin and rebound-host requests, and actions without JSON', async () => {
    const approve = (headers: Record<string, string>) => fetch(`${consoleUrl}api/approvals/none`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"approved":true}' });
    expect((await approve({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await approve({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await approve({ 'content-type': 'text/plain' })).status).toBe(403);
    expect((await approve({})).status).toBe(401);
    expect((await approve({ authorization: `Bearer ${consoleToken}` })).status).toBe(404);
    const response = await fetch(`${consoleUrl}api/state`, { headers: { authorization: `Bearer ${consoleToken}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    // A page of another origin, in the browser: its fetch is refused (no CORS headers are sent).
    const other = await browser.newPage();
    await other.goto('about:blank');
    const outcome = await other.evaluate(async (url) => {
      try {
        await fetch(`${url}api/state`);
        return 'read';
      } catch {
        return 'refused';
      }
    }, consoleUrl);
    expect(outcome).toBe('refused');
    await other.close();
  }, 60_000);
});
