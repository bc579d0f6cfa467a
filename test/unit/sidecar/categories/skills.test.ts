import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../../../src/index.js';
import { createComputerTools } from '../../../../sidecar/categories/computer.js';
import { createSkillsProjection, createSkillsState } from '../../../../sidecar/categories/skills.js';
import { parseSkillFile } from '../../../../sidecar/categories/skills/skill-catalog.js';
import { callTool, makeTempDir, testConfig, testContext, toolNamed } from './tool-harness.js';

const skillsDir = fileURLToPath(new URL('../../../fixtures/categories/skills', import.meta.url));

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug() {}, info() {}, error() {}, warn: (message, fields) => warnings.push(`${message} ${JSON.stringify(fields)}`) };
}

describe('parseSkillFile', () => {
  it('reads front matter, resolves relative server paths against the skill folder, and rejects a file without it', () => {
    const skill = parseSkillFile('---\nname: x\ndescription: d\nmcp:\n  command: ./run.sh\n  args: [a, ../b]\n  env: { K: 1 }\n---\nbody', '/skills/x');
    expect(skill).toEqual({ name: 'x', description: 'd', body: 'body', folder: '/skills/x', mcp: { command: '/skills/x/run.sh', args: ['a', '/skills/b'], env: { K: '1' } } });
    expect(parseSkillFile('---\nname: y\nmcp: { url: "https://mcp.example.com/mcp" }\n---\n', '/s/y').mcp).toEqual({ url: 'https://mcp.example.com/mcp' });
    expect(() => parseSkillFile('no front matter', '/s/z')).toThrow(/front matter/);
  });
});

describe('skills projection with a real MCP server through mcporter', () => {
  let state: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    state = await makeTempDir('skills-state');
  });
  afterAll(() => state.remove());

  it('projects knowledge, reports unknown skills and a failing server, and calls the server via run_command', async () => {
    const config = testConfig({ workspace: state.dir, stateDir: path.join(state.dir, 'state'), skillsDir });
    const logger = recordingLogger();
    const skills = createSkillsState(config, { logger })!;
    const context = testContext(config, { enabledSkills: ['style-guide', 'everything', 'broken-server', 'no-such-skill'] });
    const output = await createSkillsProjection(context, skills);
    const instructions = output.instructions ?? '';
    expect(output.tools).toEqual([]);
    expect(instructions).toContain('Commit messages say why');
    expect(instructions).toContain('Unknown skills (enabled, but no such skill in the skills folder): `no-such-skill`.');
    expect(instructions).toContain('The server `broken-server` could not be listed');
    expect(instructions).toMatch(/- `everything\.echo`\(message: string\) — Echoes back the input string/);
    expect(logger.warnings.some((w) => w.includes('no-such-skill'))).toBe(true);

    // The model does what the projection says: the exact command line it shows, through run_command.
    const line = /^(.+ call everything)\.<tool> key=value$/m.exec(instructions)?.[1];
    expect(line).toBeDefined();
    const runCommand = toolNamed(createComputerTools(testContext(config)), 'run_command');
    const call = await callTool(runCommand, { command: `${line}.echo message=hello-from-mcp` }, AbortSignal.timeout(25_000));
    expect(call.text).toContain('exit code 0');
    expect(call.text).toContain('Echo: hello-from-mcp');

    // Listed once per server config: a second turn reuses the cached listing.
    const cachedEntries = [...skills.listings.values()].map((entry) => entry.at);
    await createSkillsProjection(testContext(config, { enabledSkills: ['everything'] }), skills);
    expect([...skills.listings.values()].map((entry) => entry.at)).toEqual(cachedEntries);
  });

  it('projects nothing without enabled skills and says so without a skills folder', async () => {
    const config = testConfig({ workspace: state.dir, stateDir: state.dir });
    expect(await createSkillsProjection(testContext(config), undefined)).toEqual({ tools: [] });
    const missing = await createSkillsProjection(testContext(config, { enabledSkills: ['a'] }), createSkillsState(config, { logger: recordingLogger() }));
    expect(missing.instructions).toContain('no skills folder');
  });
});
