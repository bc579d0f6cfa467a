import { createServer, type Server } from 'node:net';
import { parseArgs } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bindFailureMessage, checkHostPort, isPortInUse, parseArgsMessage } from '../../../src/cli-usage.js';

const servers: Server[] = [];
afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

describe('checkHostPort', () => {
  it('takes HOST:PORT, [IPv6]:PORT and, where allowed, unix sockets', () => {
    expect(checkHostPort('127.0.0.1:7400', '--listen')).toBe('127.0.0.1:7400');
    expect(checkHostPort('[::1]:0', '--listen')).toBe('[::1]:0');
    expect(checkHostPort('localhost:80', '--sidecar')).toBe('localhost:80');
    expect(checkHostPort('unix:/tmp/s.sock', '--listen', { unix: true })).toBe('unix:/tmp/s.sock');
  });

  it('refuses a bare host, naming the missing port, instead of binding or dialling 443', () => {
    expect(() => checkHostPort('127.0.0.1', '--listen')).toThrow('--listen takes HOST:PORT, for example 127.0.0.1:7400; not "127.0.0.1" (the port is missing: 127.0.0.1:PORT; port 0 picks any free port)');
    expect(() => checkHostPort('127.0.0.1:99999', '--sidecar', { unix: true })).toThrow(/--sidecar takes HOST:PORT, \[IPv6\]:PORT or unix:\/path/);
    expect(() => checkHostPort('unix:/tmp/s', '--metrics-listen')).toThrow(/--metrics-listen takes HOST:PORT/);
  });
});

describe('parseArgsMessage', () => {
  it("drops Node's advice to put an unknown option after '--', meaningless under npm", () => {
    let error: unknown;
    try {
      parseArgs({ args: ['--bogus'], options: {}, strict: true, allowPositionals: true });
    } catch (caught) {
      error = caught;
    }
    expect(parseArgsMessage(error)).toBe('unknown option --bogus');
  });
});

describe('bindFailureMessage', () => {
  it('says the port is in use when it is', async () => {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    expect(await isPortInUse(`127.0.0.1:${port}`)).toBe(true);
    expect(await bindFailureMessage(`127.0.0.1:${port}`, '--listen', new Error('No address added out of total 1 resolved'))).toBe(
      `port ${port} is in use (127.0.0.1:${port}): another process listens there; stop it, or choose another --listen port (0 picks a free one)`,
    );
  });

  it("keeps grpc-js's message when the port is free", async () => {
    expect(await isPortInUse('127.0.0.1:0')).toBe(false);
    expect(await bindFailureMessage('127.0.0.1:0', '--listen', new Error('something else'))).toBe('cannot listen on 127.0.0.1:0: something else');
  });
});
