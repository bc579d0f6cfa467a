// The Dockerfile builds the image the manifests run, as they run it. Docker cannot build here, so
// this checks what can be read: the image name and version, the user, the base, the install step
// (which test/integration/package/packed-package.test.ts runs for real).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(`${root}${path}`, 'utf8');

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const final = stages.at(-1)!;

  it('is the image deploy/*.yaml name, at the package\'s version', () => {
    const version = (JSON.parse(read('package.json')) as { version: string }).version;
    for (const manifest of ['deploy/agent.yaml', 'deploy/controller.yaml']) expect(read(manifest)).toContain(`image: tools-runtime:${version}`);
    expect(dockerfile).toContain(`-t tools-runtime:${version} .`);
  });

  it('runs on Debian 12 slim with Node 20, as the manifests\' non-root user, with bubblewrap', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(final.split('\n')[0]).toBe('node:20-bookworm-slim');
    const users = new Set([...read('deploy/agent.yaml').matchAll(/runAsUser: (\d+)/g), ...read('deploy/controller.yaml').matchAll(/runAsUser: (\d+)/g)].map((match) => match[1]));
    expect([...users]).toEqual(['10001']);
    expect(final).toMatch(/^USER 10001:10001$/m);
    expect(final).toMatch(/apt-get install[^\n]* bubblewrap/);
    expect(final).toMatch(/^WORKDIR \/app$/m);
  });

  it('takes only the installed folder into the final stage: no sources, no dev dependencies', () => {
    expect(final.match(/^COPY .*$/gm)).toEqual(['COPY --from=install /app /app']);
    expect(dockerfile).toMatch(/RUN sh \/image\/deploy\/image\/install\.sh --tarball .* --dest \/app/);
  });

  it('leaves the build context small: no node_modules, dist or .git', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', '.git', '.tmp']) expect(ignored).toContain(entry);
  });
});
