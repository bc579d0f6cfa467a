import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSidecarArgs } from '../../../sidecar/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'sidecar-brain-args-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseSidecarArgs: Brain', () => {
  it('takes the Brain folder and its caps', () => {
    const options = parseSidecarArgs(['--workspace', dir, '--brain', dir, '--brain-max-pages', '500', '--brain-max-page-bytes', '65536', '--brain-max-total-bytes', '1000000'], {});
    expect(options.config.brainDir).toBe(dir);
    expect(options.config.brainLimits).toEqual({ maxPages: 500, maxPageBytes: 65_536, maxTotalBytes: 1_000_000 });
    expect(parseSidecarArgs(['--workspace', dir, '--brain', dir], {}).config.brainLimits).toBeUndefined();
  });

  it('rejects a cap without --brain, and a cap that is not a positive integer', () => {
    expect(() => parseSidecarArgs(['--workspace', dir, '--brain-max-pages', '5'], {})).toThrow('--brain-max-pages needs --brain DIR');
    expect(() => parseSidecarArgs(['--workspace', dir, '--brain', dir, '--brain-max-page-bytes', '0'], {})).toThrow(
      '--brain-max-page-bytes: expected a positive integer, got "0"',
    );
    expect(() => parseSidecarArgs(['--workspace', dir, '--brain', join(dir, 'missing')], {})).toThrow(/--brain: .* is not an existing directory/);
  });
});
