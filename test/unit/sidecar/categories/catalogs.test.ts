import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isToolRuntimeError, silentLogger } from '../../../../src/index.js';
import { assembleToolSet, type ControlChannel } from '../../../../sidecar/categories/category.js';
import type { SidecarConfig } from '../../../../sidecar/sidecar-config.js';
import { createCatalogs } from '../../../../sidecar/tool-sets.js';
import { makeTempDir, testConfig, testContext } from './tool-harness.js';

const brainDir = fileURLToPath(new URL('../../../fixtures/categories/brain', import.meta.url));
const skillsDir = fileURLToPath(new URL('../../../fixtures/categories/skills', import.meta.url));
const schema = JSON.stringify({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false });
const fetchProfile = { allowPrivateNetwork: false, maxRedirects: 3, maxBytes: 1000, timeoutMs: 1000, userAgent: 't' };
const searchProfile = { provider: 'searxng' as const, url: 'http://127.0.0.1:9', timeoutMs: 1000, maxResults: 5, allowPrivateNetwork: true };
const computer = ['run_command', 'read_file', 'write_file', 'edit_file', 'apply_patch', 'list_files', 'start_command', 'write_session', 'read_session', 'list_sessions', 'kill_session'];
const scheduleTools = ['schedule_create', 'schedule_list', 'schedule_delete'];
const jobTools = ['job_start', 'job_list', 'job_show', 'job_cancel'];
const workflowTools = ['workflow_start', 'workflow_show', 'workflow_list', 'workflow_cancel'];
// Never answered: assembling tools does not run them.
const control: ControlChannel = { request: () => Promise.reject(new Error('not in this test')) };

describe('the two catalogs pin their tool names', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  const opened: Array<{ close(): Promise<void> }> = [];
  beforeAll(async () => {
    temp = await makeTempDir('catalogs');
  });
  afterAll(async () => {
    await Promise.all(opened.map((catalogs) => catalogs.close()));
    await temp.remove();
  });

  const names = async (extra: Partial<SidecarConfig>, turn: Parameters<typeof testContext>[1]) => {
    const config = testConfig({ workspace: temp.dir, stateDir: path.join(temp.dir, 'state'), ...extra });
    const catalogs = createCatalogs(config, { logger: silentLogger });
    opened.push(catalogs);
    const set = await assembleToolSet(catalogs, testContext(config, turn));
    return { tools: set.tools.map((tool) => tool.name), instructions: set.instructions };
  };

  it('text turns: todo, computer, then web by profile; jobs, Brain and submit_result never', async () => {
    const todo = (await names({}, {})).tools.slice(0, 2);
    expect(todo).toEqual(['todo_write', 'todo_read']);
    expect((await names({}, {})).tools).toEqual([...todo, ...computer]);
    expect((await names({}, { canSpawnJobs: true, brainEnabled: true })).tools).toEqual([...todo, ...computer]);
    expect((await names({ webFetch: fetchProfile }, {})).tools).toEqual([...todo, ...computer, 'web_fetch']);
    expect((await names({ webFetch: fetchProfile, webSearch: searchProfile, brainDir }, { brainEnabled: true })).tools).toEqual([...todo, ...computer, 'web_fetch', 'web_search']);
  });

  it('text turns project the enabled skills into the instructions, not tools', async () => {
    const set = await names({ skillsDir }, { enabledSkills: ['style-guide', 'missing'] });
    expect(set.tools).toEqual([...(await names({}, {})).tools]);
    expect(set.instructions).toContain('## style-guide');
    expect(set.instructions).toContain('`missing`');
  });

  it('workflow task turns: web, Brain when enabled, submit_result; nothing else', async () => {
    const task = { kind: 'workflow_task' as const, resultSchemaJson: schema, enabledSkills: ['style-guide'], canSpawnJobs: true };
    expect((await names({ skillsDir }, task)).tools).toEqual(['submit_result']);
    expect((await names({ brainDir }, { ...task, brainEnabled: false })).tools).toEqual(['submit_result']);
    expect((await names({ brainDir }, { ...task, brainEnabled: true })).tools).toEqual(['recall', 'get_page', 'submit_result']);
    expect((await names({}, { ...task, brainEnabled: true })).tools).toEqual(['submit_result']);
    const full = await names({ brainDir, skillsDir, webFetch: fetchProfile, webSearch: searchProfile }, { ...task, brainEnabled: true });
    expect(full.tools).toEqual(['web_fetch', 'web_search', 'recall', 'get_page', 'submit_result']);
    expect(full.instructions).toBe('');
  });

  it('a workflow task without a usable result schema fails assembly with invalid_request', async () => {
    const error = await names({}, { kind: 'workflow_task', resultSchemaJson: '' }).catch((e: unknown) => e);
    expect(isToolRuntimeError(error, 'invalid_request')).toBe(true);
  });

  it('every combination of control_plane, can_spawn_jobs, kind, Brain and web gives the seed\'s names in order', async () => {
    const config = testConfig({ workspace: temp.dir, stateDir: path.join(temp.dir, 'state-all'), brainDir, skillsDir });
    const webProfiles: Array<[string, Partial<SidecarConfig>, string[]]> = [
      ['no web', {}, []],
      ['fetch', { webFetch: fetchProfile }, ['web_fetch']],
      ['fetch and search', { webFetch: fetchProfile, webSearch: searchProfile }, ['web_fetch', 'web_search']],
    ];
    // A category's own part of the configuration is bound when the catalogs are composed: one
    // sidecar's catalogs per web profile (each its own state folder, so each its own Brain index).
    const catalogsFor = new Map(
      webProfiles.map(([webName, web], index) => {
        const catalogs = createCatalogs({ ...config, ...web, stateDir: path.join(temp.dir, `state-all-${index}`) }, { logger: silentLogger });
        opened.push(catalogs);
        return [webName, catalogs] as const;
      }),
    );
    let combinations = 0;
    for (const controlPlane of [false, true]) {
      for (const canSpawnJobs of [false, true]) {
        for (const kind of ['text', 'workflow_task'] as const) {
          for (const brainEnabled of [false, true]) {
            for (const [webName, , webTools] of webProfiles) {
              const turn = { kind, controlPlane, canSpawnJobs, brainEnabled, enabledSkills: ['style-guide'], ...(kind === 'workflow_task' ? { resultSchemaJson: schema } : {}) };
              const context = { ...testContext(config, turn), ...(controlPlane ? { control } : {}) };
              const set = await assembleToolSet(catalogsFor.get(webName)!, context);
              const expected =
                kind === 'text'
                  ? [
                      'todo_write',
                      'todo_read',
                      ...computer,
                      ...webTools,
                      ...(controlPlane ? scheduleTools : []),
                      ...(controlPlane && canSpawnJobs ? jobTools : []),
                      ...(controlPlane ? workflowTools : []),
                    ]
                  : [...webTools, ...(brainEnabled ? ['recall', 'get_page'] : []), 'submit_result'];
              expect(set.tools.map((tool) => tool.name), `${kind}, control_plane ${controlPlane}, jobs ${canSpawnJobs}, brain ${brainEnabled}, ${webName}`).toEqual(expected);
              combinations++;
            }
          }
        }
      }
    }
    expect(combinations).toBe(48);
  });

  it('the control-plane tools are offered only with a control channel, even when the turn says control_plane', async () => {
    const set = await names({}, { controlPlane: true, canSpawnJobs: true });
    expect(set.tools).toEqual(['todo_write', 'todo_read', ...computer]);
  });

  it('every built-in tool says whether it only reads or destroys (what approval policies go by)', async () => {
    const config = testConfig({ workspace: temp.dir, stateDir: path.join(temp.dir, 'state-flags'), brainDir, webFetch: fetchProfile, webSearch: searchProfile });
    const catalogs = createCatalogs(config, { logger: silentLogger });
    opened.push(catalogs);
    const text = await assembleToolSet(catalogs, { ...testContext(config, { controlPlane: true, canSpawnJobs: true }), control });
    const task = await assembleToolSet(catalogs, testContext(config, { kind: 'workflow_task', resultSchemaJson: schema, brainEnabled: true }));
    const flags = Object.fromEntries(
      [...text.tools, ...task.tools].map((tool) => [tool.name, tool.isDestructive ? 'destructive' : tool.isReadOnly ? 'read-only' : 'writes']),
    );
    expect(flags).toEqual({
      todo_write: 'writes', todo_read: 'read-only',
      run_command: 'destructive', read_file: 'read-only', write_file: 'destructive', edit_file: 'destructive', apply_patch: 'destructive', list_files: 'read-only',
      // kill_session ends only a process this agent started (start_command was the destructive step).
      start_command: 'destructive', write_session: 'destructive', read_session: 'read-only', list_sessions: 'read-only', kill_session: 'writes',
      web_fetch: 'read-only', web_search: 'read-only',
      schedule_create: 'writes', schedule_list: 'read-only', schedule_delete: 'destructive',
      job_start: 'writes', job_list: 'read-only', job_show: 'read-only', job_cancel: 'destructive',
      workflow_start: 'writes', workflow_show: 'read-only', workflow_list: 'read-only', workflow_cancel: 'destructive',
      recall: 'read-only', get_page: 'read-only', submit_result: 'writes',
    });
    expect([...text.tools, ...task.tools].filter((tool) => tool.isReadOnly && tool.isDestructive)).toEqual([]);
  });
});
