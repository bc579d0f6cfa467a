import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSidecarArgs, sidecarHelpRequested } from '../../../sidecar/parse-sidecar-args.js';
import { defaultSidecarLimits } from '../../../sidecar/sidecar-limits.js';

const dir = mkdtempSync(join(tmpdir(), 'sidecar-args-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseSidecarArgs', () => {
  it('fills defaults: loopback listen, hashed state dir, default limits, no web profiles', () => {
    const options = parseSidecarArgs(['--workspace', dir], {});
    expect(options.listen).toBe('127.0.0.1:0');
    expect(options.config.workspace).toBe(dir);
    expect(options.config.stateDir).toMatch(/\.local\/state\/tools-runtime\/[0-9a-f]{16}$/);
    expect(options.config.limits).toEqual(defaultSidecarLimits);
    expect(options.config.webFetch).toBeUndefined();
    expect(options.config.webSearch).toBeUndefined();
    expect(options.exitOnStdinEof).toBe(false);
  });

  it('reads --limits over the defaults, or off, and refuses a bad one naming it', () => {
    expect(parseSidecarArgs(['--workspace', dir], {}).config.processLimits).toBeUndefined();
    expect(parseSidecarArgs(['--workspace', dir, '--limits', 'memory=512M,pids=128'], {}).config.processLimits).toMatchObject({ enabled: true, memoryBytes: 512 * 1024 ** 2, pids: 128 });
    expect(parseSidecarArgs(['--workspace', dir, '--limits', 'off'], {}).config.processLimits).toMatchObject({ enabled: false });
    expect(() => parseSidecarArgs(['--workspace', dir, '--limits', 'memory=much'], {})).toThrow(/--limits: expected a size/);
  });

  it('parses the reverse-request limits and the stdin lifeline', () => {
    const options = parseSidecarArgs(
      ['--workspace', dir, '--max-client-requests-per-call', '3', '--max-pending-client-requests', '5', '--max-client-message-bytes', '4096', '--exit-on-stdin-eof'],
      {},
    );
    expect(options.config.limits).toEqual({ ...defaultSidecarLimits, maxClientRequestsPerCall: 3, maxPendingClientRequestsPerTurn: 5, maxClientMessageBytes: 4096 });
    expect(options.exitOnStdinEof).toBe(true);
    // Up to the gRPC message limit, which may be raised with it.
    const raised = parseSidecarArgs(['--workspace', dir, '--max-message-bytes', '33554432', '--max-client-message-bytes', '33554432'], {});
    expect(raised.config.limits.maxClientMessageBytes).toBe(33_554_432);
  });

  it('refuses bad reverse-request limits, naming the flag', () => {
    for (const flag of ['--max-client-requests-per-call', '--max-pending-client-requests', '--max-client-message-bytes']) {
      for (const bad of ['0', '-1', '2.5', 'many', '']) {
        expect(() => parseSidecarArgs(['--workspace', dir, `${flag}=${bad}`], {})).toThrow(`${flag}: expected a positive integer, got ${JSON.stringify(bad)}`);
      }
      expect(() => parseSidecarArgs(['--workspace', dir, flag], {})).toThrow(`Option '${flag} <value>' argument missing`);
    }
    expect(() => parseSidecarArgs(['--workspace', dir, '--max-client-message-bytes', '16777217'], {})).toThrow(
      '--max-client-message-bytes: 16777217 is over the gRPC message limit of 16777216 (--max-message-bytes)',
    );
    expect(() => parseSidecarArgs(['--workspace', dir, '--max-message-bytes', '1000', '--max-client-message-bytes', '1001'], {})).toThrow('over the gRPC message limit of 1000');
    // A small message limit alone keeps the default reverse-request size, as before these flags.
    expect(parseSidecarArgs(['--workspace', dir, '--max-message-bytes', '1000'], {}).config.limits.maxClientMessageBytes).toBe(defaultSidecarLimits.maxClientMessageBytes);
  });

  it('notices --help and -h wherever they are, and only them', () => {
    expect(sidecarHelpRequested(['--help'])).toBe(true);
    expect(sidecarHelpRequested(['--workspace', dir, '-h'])).toBe(true);
    expect(sidecarHelpRequested(['--bogus', '--help'])).toBe(true);
    expect(sidecarHelpRequested(['--workspace', dir])).toBe(false);
    expect(sidecarHelpRequested(['--env', '--help'])).toBe(false);
  });

  it('parses limits, env, web profiles and files', () => {
    const key = join(dir, 'brave.key');
    writeFileSync(key, 'brave-key\n');
    const options = parseSidecarArgs(
      ['--workspace', dir, '--max-result-chars', '500', '--abort-grace-ms', '100', '--env', 'A=1=2', '--env-allow', 'GOPATH',
        '--web-fetch', '--web-allow-private', '--web-search-provider', 'brave', '--web-search-key-file', key],
      {},
    );
    expect(options.config.limits.maxResultTextChars).toBe(500);
    expect(options.config.limits.abortGraceMs).toBe(100);
    expect(options.config.commandEnv).toEqual({ A: '1=2' });
    expect(options.config.commandEnvAllowList).toContain('GOPATH');
    expect(options.config.webFetch).toEqual({ allowPrivateNetwork: true, maxRedirects: 5, maxBytes: 5 * 1024 * 1024, timeoutMs: 30_000, userAgent: 'tools-runtime/0.1' });
    expect(options.config.webSearch).toMatchObject({ provider: 'brave', url: 'https://api.search.brave.com/res/v1/web/search', apiKey: 'brave-key', maxResults: 10, timeoutMs: 15_000 });
  });

  it('rejects bad input with specific messages', () => {
    expect(() => parseSidecarArgs([], {})).toThrow('--workspace DIR is required');
    expect(() => parseSidecarArgs(['--workspace', join(dir, 'missing')], {})).toThrow('is not an existing directory');
    expect(() => parseSidecarArgs(['--workspace', dir, '--max-message-bytes', 'lots'], {})).toThrow('--max-message-bytes: expected a positive integer');
    expect(() => parseSidecarArgs(['--workspace', dir, '--log-level', 'loud'], {})).toThrow('--log-level');
    expect(() => parseSidecarArgs(['--workspace', dir, '--bogus'], {})).toThrow('unknown option --bogus');
    expect(() => parseSidecarArgs(['--workspace', dir, '--listen', '10.0.0.5:7000'], {})).toThrow('refusing to listen on 10.0.0.5:7000');
    expect(() => parseSidecarArgs(['--workspace', dir, '--web-search-provider', 'brave'], {})).toThrow('needs --web-search-key-file');
    expect(() => parseSidecarArgs(['--workspace', dir, '--tls-cert', 'x.pem'], {})).toThrow('TLS needs both');
  });
});
