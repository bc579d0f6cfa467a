import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxMode } from '../../../src/gen/toolruntime/v1/sidecar.js';
import { descendantsOf, liveProcesses, waitFor } from '../../fixtures/process-tree.js';
import { startSidecar, type StartedSidecar } from '../../fixtures/start-sidecar.js';
import { requireSystemTools } from '../../fixtures/system-tools.js';
import { createClient, openTurn, textOf, type TurnDriver } from '../sidecar/turn-driver.js';

// The escape corpus: over real gRPC, a real sidecar with its default sandbox (workspace-write,
// network off) under real bubblewrap. Each attempt is refused and nothing outside changes; the
// work a model is there for still works.
const suite = requireSystemTools({
  suite: 'sandbox escape corpus',
  tools: [
    { name: 'bwrap', executable: '/usr/bin/bwrap' },
    { name: 'gcc', executable: '/usr/bin/gcc' },
    { name: 'git', executable: '/usr/bin/git' },
    { name: 'socat', executable: '/usr/bin/socat' },
  ],
  aptPackages: ['bubblewrap', 'gcc', 'git', 'socat'],
});

const TOKEN = `token-${Math.random().toString(36).slice(2)}`;
const ENV_SECRET = `env-secret-${Math.random().toString(36).slice(2)}`;
let dir: string;
let workspace: string;
let home: string;
let stateDir: string;
let tokenFile: string;
let sidecar: StartedSidecar;
let turn: TurnDriver;
let sidecarPid: number;
let loopback: Server;
let loopbackPort: number;
let loopbackConnections = 0;
let callCount = 0;

/** Runs `command` through run_command; returns the result's text and error code. */
async function run(command: string, driver = turn): Promise<{ text: string; code: string }> {
  const result = await driver.call(`c${++callCount}`, 'run_command', { command, timeout_ms: 60_000 });
  return { text: textOf(result), code: result.error?.code ?? '' };
}

/** git on the host, as the project runs it: no fsmonitor, no hooks. */
const hostGit = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', ...args], { cwd, encoding: 'utf8' });

/** Live host processes whose command line is exactly `command`. */
const running = (command: string) => liveProcesses().filter((entry) => entry.command === command);

describe('sandbox escape corpus', suite, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-escape-'));
    workspace = join(dir, 'workspace');
    home = join(dir, 'home');
    stateDir = join(dir, 'state');
    tokenFile = join(dir, 'token');
    for (const folder of [workspace, home, stateDir]) mkdirSync(folder);
    writeFileSync(tokenFile, `${TOKEN}\n`);
    writeFileSync(join(stateDir, 'listing-marker'), 'STATE-CONTENT\n');
    mkdirSync(join(workspace, 'secrets'));
    writeFileSync(join(workspace, 'secrets', 'key.pem'), 'PRIVATE KEY\n');
    writeFileSync(join(workspace, 'notes.txt'), 'hello\n');
    hostGit(workspace, 'init', '-q');
    // A nested checkout, and a worktree whose `.git` file names a gitdir elsewhere in the workspace.
    mkdirSync(join(workspace, 'vendor', 'lib'), { recursive: true });
    hostGit(join(workspace, 'vendor', 'lib'), 'init', '-q');
    mkdirSync(join(workspace, 'data'));
    hostGit(workspace, 'init', '-q', '--separate-git-dir', join(workspace, 'data', 'realgit'), join(workspace, 'wt'));
    mkdirSync(join(workspace, 'conf'));
    writeFileSync(join(workspace, 'conf', 'secret.env'), 'CONF-SECRET\n');
    writeFileSync(join(workspace, 'conf', 'app.env'), 'PLAIN\n');
    mkdirSync(join(workspace, 'vault'));
    writeFileSync(join(workspace, 'vault', 'x'), 'VAULT-SECRET\n');
    loopback = createServer((socket) => {
      loopbackConnections++;
      socket.end('HELLO FROM OUTSIDE\n');
    });
    await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve));
    loopbackPort = (loopback.address() as { port: number }).port;
    sidecar = await startSidecar({
      args: ['--workspace', workspace, '--state-dir', stateDir, '--token-file', tokenFile, '--hide', join(workspace, 'secrets'), '--hide', join(workspace, 'conf', 'secret.env'), '--hide', join(workspace, 'vault'), '--sandbox', 'workspace-write', '--log-level', 'error'],
      env: { HOME: home, SANDBOX_TEST_SECRET: ENV_SECRET },
    });
    turn = await openTurn(createClient(sidecar.address, TOKEN), 'agent-escape');
    const node = descendantsOf(sidecar.child.pid!).find((entry) => entry.command.includes('sidecar/main.ts') && !entry.command.includes('tsx/dist/cli'));
    sidecarPid = node?.pid ?? sidecar.child.pid!;
  }, 60_000);

  afterAll(async () => {
    await turn?.end().catch(() => {});
    await sidecar?.stop('SIGKILL');
    await new Promise((resolve) => loopback?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('cannot write outside the workspace: $HOME, /etc, the state folder; /tmp is private', async () => {
    const marker = `pwned-${Date.now()}`;
    const { text } = await run(
      [`echo x > "$HOME/${marker}" && echo HOME-WRITTEN`, `echo x > /etc/${marker} && echo ETC-WRITTEN`, `echo x > ${stateDir}/${marker} && echo STATE-WRITTEN`, `echo x > /tmp/${marker} && echo TMP-WRITTEN-INSIDE`, 'true'].join('; '),
    );
    expect(text).not.toMatch(/HOME-WRITTEN|ETC-WRITTEN|STATE-WRITTEN/);
    expect(text).toContain('TMP-WRITTEN-INSIDE');
    for (const path of [join(home, marker), `/etc/${marker}`, join(stateDir, marker), `/tmp/${marker}`]) expect(existsSync(path), path).toBe(false);
  });

  it('cannot read the token file, the state folder or a --hide path under the workspace, by any path', async () => {
    const { text } = await run(`cat ${tokenFile}; cat /proc/1/root${tokenFile}; ls -A ${stateDir}; cat ${stateDir}/listing-marker; cat /proc/1/root${stateDir}/listing-marker; ls -A ${workspace}/secrets; echo LISTED; cat ${workspace}/secrets/key.pem; ln -s ${tokenFile} t-link && cat t-link; echo END`);
    expect(text).toContain('END');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('STATE-CONTENT');
    expect(text).not.toMatch(/^listing-marker$/m);
    expect(text).not.toContain('PRIVATE KEY');
    expect(text).not.toMatch(/^key\.pem$/m);
    expect(readFileSync(tokenFile, 'utf8')).toBe(`${TOKEN}\n`);
  });

  it('the file tools hide the same paths and refuse .git/hooks', async () => {
    const read = await turn.call('f1', 'read_file', { path: 'secrets/key.pem' });
    expect(read.error?.code).toBe('sandbox_denied');
    const listed = await turn.call('f2', 'list_files', { pattern: '**/*' });
    expect(textOf(listed)).toContain('notes.txt');
    expect(textOf(listed)).not.toContain('key.pem');
    const hook = await turn.call('f3', 'write_file', { path: '.git/hooks/pre-commit', content: '#!/bin/sh\necho planted\n' });
    expect(hook.error?.code).toBe('sandbox_denied');
    expect(existsSync(join(workspace, '.git', 'hooks', 'pre-commit'))).toBe(false);
  });

  it('a symlink made inside the workspace that points out cannot be written through', async () => {
    const { text } = await run(`ln -s ${home} out && echo x > out/through-link && echo WROTE; ln -s /etc/hostname host && echo x >> host && echo APPENDED; echo x > .git/hooks/pre-commit && echo HOOK; true`);
    expect(text).not.toMatch(/WROTE|APPENDED|HOOK/);
    expect(existsSync(join(home, 'through-link'))).toBe(false);
    expect(existsSync(join(workspace, '.git', 'hooks', 'pre-commit'))).toBe(false);
  });

  it('sees no other process: not the sidecar\'s environment, not its pid to signal', async () => {
    const { text } = await run(`cat /proc/${sidecarPid}/environ; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep SANDBOX_TEST_SECRET; kill -9 ${sidecarPid} && echo KILLED; ps -e -o pid= | wc -l; true`);
    expect(text).not.toContain(ENV_SECRET);
    expect(text).not.toContain('KILLED');
    expect(() => process.kill(sidecarPid, 0)).not.toThrow();
    // The sandbox's own init, the shell and ps at most.
    const count = Number(text.trim().split('\n').at(-1));
    expect(count).toBeLessThanOrEqual(4);
  });

  it('cannot undo the sandbox: no nested user namespace, no mount, no capabilities', async () => {
    const { text } = await run('unshare -Ur true && echo USERNS; mount -t tmpfs none /mnt && echo MOUNTED; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status; true');
    expect(text).not.toMatch(/USERNS|MOUNTED/);
    expect(text).toMatch(/CapEff:\s+0000000000000000/);
    expect(text).toMatch(/NoNewPrivs:\s+1/);
  });

  it('cannot reach a 127.0.0.1 server outside the sandbox, nor any other host', async () => {
    const before = loopbackConnections;
    const { text } = await run(`curl -sS --max-time 3 http://127.0.0.1:${loopbackPort}/ && echo REACHED; curl -sS --max-time 3 http://1.1.1.1/ && echo INTERNET; true`);
    expect(text).not.toMatch(/HELLO FROM OUTSIDE|REACHED|INTERNET/);
    expect(loopbackConnections).toBe(before);
  });

  it("cannot see nor connect to the host's daemons' sockets under /run (docker.sock and the like)", async () => {
    // A host daemon's socket where they live; AF_UNIX is open to commands under network off.
    const socketPath = `/run/tools-runtime-escape-${process.pid}.sock`;
    let accepted = 0;
    const daemon = createServer((socket) => {
      accepted++;
      socket.end('DAEMON ANSWERED\n');
    });
    await new Promise<void>((resolve) => daemon.listen(socketPath, resolve));
    try {
      const { text } = await run(`test -e ${socketPath} && echo SEEN; socat -T 3 - UNIX-CONNECT:${socketPath} </dev/null; ls -A /run | wc -l; echo resolv-lines=$(wc -l < /etc/resolv.conf)`);
      expect(text).not.toMatch(/SEEN|DAEMON ANSWERED/);
      expect(text).toMatch(/^0$/m);
      // What commands still need from /run is kept: resolv.conf reads wherever it links.
      expect(text).toMatch(/resolv-lines=[1-9]/);
      expect(accepted).toBe(0);
    } finally {
      await new Promise((resolve) => daemon.close(resolve));
      rmSync(socketPath, { force: true });
    }
  });

  it('nothing started with setsid, a double fork or nohup outlives its call', async () => {
    const { text } = await run('setsid sleep 3011 > /dev/null 2>&1 & (sleep 3012 > /dev/null 2>&1 &) ; nohup sleep 3013 > /dev/null 2>&1 & sleep 0.2; echo STARTED');
    expect(text).toContain('STARTED');
    const left = await waitFor(() => (['sleep 3011', 'sleep 3012', 'sleep 3013'].every((command) => running(command).length === 0) ? [] : undefined), 5_000);
    expect(left, JSON.stringify(liveProcesses().filter((entry) => entry.command.startsWith('sleep 301')))).toEqual([]);
  });

  it('a cancelled call leaves nothing, escapes included', async () => {
    const pending = turn.call('cancel-me', 'run_command', { command: 'setsid sleep 3021 > /dev/null 2>&1 & (sleep 3022 &); sleep 3023' });
    await waitFor(() => (running('sleep 3023').length > 0 ? true : undefined), 10_000);
    turn.cancel('cancel-me');
    expect((await pending).error?.code).toBe('aborted');
    const left = await waitFor(() => (['sleep 3021', 'sleep 3022', 'sleep 3023'].every((command) => running(command).length === 0) ? [] : undefined), 5_000);
    expect(left).toEqual([]);
  });

  it('allowed work still works: build and run a C program, git init and commit, read /usr', async () => {
    const { text, code } = await run(
      [
        `printf 'int main(void) { return 42; }\\n' > prog.c`,
        'cc -o prog prog.c',
        './prog; echo "exit $?"',
        'git init -q repo && cd repo && echo hi > a.txt && git add a.txt && git -c user.email=a@example.com -c user.name=A commit -qm first && git log --oneline | wc -l',
        'cd .. && ls /usr/bin | grep -c .',
      ].join(' && '),
    );
    expect(code).toBe('');
    expect(text).toContain('exit 42');
    const lines = text.trim().split('\n');
    expect(lines.at(-2)).toBe('1');
    expect(Number(lines.at(-1))).toBeGreaterThan(10);
    expect(existsSync(join(workspace, 'repo', '.git'))).toBe(true);
  });

  it('git metadata stays read-only: config, hooks, a renamed .git, a gitdir file, nested repositories', async () => {
    const config = readFileSync(join(workspace, '.git', 'config'), 'utf8');
    const { text } = await run(
      [
        'git config core.fsmonitor "touch /tmp/x" && echo FSMONITOR',
        'git config core.hooksPath hooks2 && echo HOOKSPATH',
        'mv .git .git2 && echo MOVED',
        'cp -a .git .gitcopy && echo "gitdir: .gitcopy" > .git && echo POINTED',
        'git -C vendor/lib config core.fsmonitor "touch /tmp/x" && echo NESTED',
        // A parent of a mount point can be renamed; the read-only mount moves with it.
        'mv vendor vendor2 && { git -C vendor2/lib config core.fsmonitor "touch /tmp/x" && echo MOVED-NESTED; mv vendor2 vendor; }',
        'echo "[core]" >> data/realgit/config && echo GITDIR',
        'echo "gitdir: /tmp" > wt/.git && echo WTFILE',
        'touch notes2.txt && git add notes2.txt && echo ADDED',
        'echo END',
      ].join('; '),
    );
    expect(text).toContain('END');
    expect(text).not.toMatch(/FSMONITOR|HOOKSPATH|MOVED|POINTED|NESTED|GITDIR|WTFILE|ADDED/);
    expect(existsSync(join(workspace, 'vendor', 'lib', '.git'))).toBe(true);
    expect(readFileSync(join(workspace, '.git', 'config'), 'utf8')).toBe(config);
    expect(statSync(join(workspace, '.git')).isDirectory()).toBe(true);
    expect(readFileSync(join(workspace, 'vendor', 'lib', '.git', 'config'), 'utf8')).not.toMatch(/fsmonitor|hookspath/i);
  });

  it('the file tools refuse git metadata at any depth and under any name', async () => {
    const paths = ['.git/config', '.git/modules/sub/hooks/pre-commit', 'vendor/lib/.git/hooks/pre-commit', 'data/realgit/hooks/pre-commit', 'wt/.git', 'new/.git'];
    for (const [index, path] of paths.entries()) {
      const result = await turn.call(`g${index}`, 'write_file', { path, content: '#!/bin/sh\necho planted\n' });
      expect(result.error?.code, path).toBe('sandbox_denied');
    }
    expect(existsSync(join(workspace, 'data', 'realgit', 'hooks', 'pre-commit'))).toBe(false);
    expect((await turn.call('g-ok', 'write_file', { path: 'vendor/lib/readme.txt', content: 'fine\n' })).error).toBeUndefined();
  });

  it('a root sidecar\'s commands cannot write /proc/sys nor leave a setuid or setgid program', async () => {
    const before = readFileSync('/proc/sys/kernel/core_pattern', 'utf8');
    const { text } = await run(
      [
        'echo "|/tmp/x" > /proc/sys/kernel/core_pattern && echo SYSCTL',
        `printf 'int main(void) { return 0; }\\n' > suid.c && cc -o suid suid.c`,
        'chmod 4755 suid && echo SETUID',
        'chmod g+s suid && echo SETGID',
        'install -m 6755 suid suid2 && echo INSTALLED',
        'chmod 700 suid && echo PLAIN',
      ].join('; '),
    );
    expect(text).not.toMatch(/SYSCTL|SETUID|SETGID|INSTALLED/);
    expect(text).toContain('PLAIN');
    expect(readFileSync('/proc/sys/kernel/core_pattern', 'utf8')).toBe(before);
    expect(statSync(join(workspace, 'suid')).mode & 0o6000).toBe(0);
  });

  it('a hidden file stays hidden when its folder is renamed, and the file tools compare by inode', async () => {
    const { text } = await run('mv conf conf2 && echo MOVED; cat conf2/secret.env conf/secret.env; mv conf/secret.env s && echo MOVEDFILE; cat conf/app.env; echo END');
    expect(text).not.toMatch(/CONF-SECRET|MOVED/);
    expect(text).toContain('PLAIN');
    expect(existsSync(join(workspace, 'conf', 'secret.env'))).toBe(true);
    // A hard link made outside carries the same inode under another name.
    linkSync(join(workspace, 'conf', 'secret.env'), join(workspace, 'linked.env'));
    try {
      expect((await turn.call('i1', 'read_file', { path: 'linked.env' })).error?.code).toBe('sandbox_denied');
    } finally {
      rmSync(join(workspace, 'linked.env'));
    }
  });

  it('a hidden folder moved away outside the sandbox stops every command until it is back', async () => {
    await run('true');
    renameSync(join(workspace, 'vault'), join(workspace, 'vault2'));
    try {
      const refused = await run('cat vault2/x; echo RAN');
      expect(refused.code).toBe('sandbox_unavailable');
      expect(refused.text).toContain(join(workspace, 'vault'));
      expect(refused.text).not.toMatch(/VAULT-SECRET|RAN/);
      expect((await turn.call('v1', 'read_file', { path: 'vault2/x' })).error?.code).toBe('sandbox_denied');
    } finally {
      renameSync(join(workspace, 'vault2'), join(workspace, 'vault'));
    }
    expect((await run('echo RAN')).text).toContain('RAN');
  });

  it('a turn can tighten the sandbox to read-only, and then file tools refuse writes too', async () => {
    const tightened = await openTurn(createClient(sidecar.address, TOKEN), 'agent-tight', undefined, { sandbox: { mode: SandboxMode.SANDBOX_MODE_READ_ONLY, networkOff: true } });
    const { text } = await run('touch tightened.txt && echo TOUCHED; true', tightened);
    expect(text).not.toContain('TOUCHED');
    expect(existsSync(join(workspace, 'tightened.txt'))).toBe(false);
    const write = await tightened.call('w1', 'write_file', { path: 'tightened.txt', content: 'x' });
    expect(write.error?.code).toBe('sandbox_denied');
    expect(write.error?.message).toContain('read-only');
    await tightened.end();
  });

  // Last: they end the sidecar.
  it('what a running command started dies with the sidecar when it is SIGKILLed', async () => {
    void turn.call('long', 'run_command', { command: 'setsid sleep 3031 > /dev/null 2>&1 & (sleep 3032 &); nohup sleep 3033 > /dev/null 2>&1 & sleep 3034' });
    await waitFor(() => (running('sleep 3034').length > 0 ? true : undefined), 10_000);
    await sidecar.stop('SIGKILL');
    const left = await waitFor(() => (['sleep 3031', 'sleep 3032', 'sleep 3033', 'sleep 3034'].every((command) => running(command).length === 0) ? [] : undefined), 10_000);
    expect(left, JSON.stringify(liveProcesses().filter((entry) => entry.command.startsWith('sleep 303')))).toEqual([]);
  });
});

describe('sandbox escape corpus: the sidecar SIGTERMed', suite, () => {
  it('what a running command started dies when the sidecar drains and exits', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'sandbox-term-'));
    try {
      const started = await startSidecar({ args: ['--workspace', folder, '--state-dir', join(folder, '.state'), '--drain-grace-ms', '200', '--log-level', 'error'] });
      const driver = await openTurn(createClient(started.address), 'agent-term');
      void driver.call('long', 'run_command', { command: 'setsid sleep 3041 > /dev/null 2>&1 & (sleep 3042 &); nohup sleep 3043 > /dev/null 2>&1 & sleep 3044' });
      await waitFor(() => (running('sleep 3044').length > 0 ? true : undefined), 10_000);
      expect(await started.stop('SIGTERM')).toBe(0);
      const left = await waitFor(() => (['sleep 3041', 'sleep 3042', 'sleep 3043', 'sleep 3044'].every((command) => running(command).length === 0) ? [] : undefined), 10_000);
      expect(left).toEqual([]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);
});


describe('sandbox escape corpus: --network on, a workspace without git', suite, () => {
  let folder: string;
  let open: StartedSidecar;
  let driver: TurnDriver;
  let abstract: ChildProcess;
  let tcp: Server;
  let tcpPort: number;
  let home2: string;
  const abstractName = `tools-runtime-test-${Math.random().toString(36).slice(2)}`;
  const send = async (command: string) => textOf(await driver.call(`n${++callCount}`, 'run_command', { command, timeout_ms: 60_000 }));

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'sandbox-net-on-'));
    mkdirSync(join(folder, 'workspace'));
    mkdirSync(join(folder, 'workspace', 'sub'));
    // socat, not node: node's listen('\0name') does not bind an abstract name.
    const marker = join(folder, 'abstract-reached');
    abstract = spawn('socat', [`ABSTRACT-LISTEN:${abstractName},fork`, `SYSTEM:echo HELLO FROM AN ABSTRACT SOCKET; touch ${marker}`], { stdio: 'ignore' });
    await waitFor(() => (readFileSync('/proc/net/unix', 'utf8').includes(`@${abstractName}`) ? true : undefined), 10_000);
    tcp = createServer((socket) => {
      socket.on('error', () => {});
      socket.end('HELLO OVER TCP\n', () => socket.destroy());
    });
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    tcpPort = (tcp.address() as { port: number }).port;
    // A home the sandbox shows (the rest of the host's /tmp is gone inside), with another agent's state.
    home2 = join(folder, 'workspace', 'home');
    mkdirSync(join(home2, '.local', 'state', 'tools-runtime', '0123abcd'), { recursive: true });
    writeFileSync(join(home2, '.local', 'state', 'tools-runtime', '0123abcd', 'screen'), 'OTHER-AGENT-STATE\n');
    open = await startSidecar({ args: ['--workspace', join(folder, 'workspace'), '--state-dir', join(folder, 'state'), '--network', 'on', '--log-level', 'error'], env: { HOME: home2 } });
    driver = await openTurn(createClient(open.address, open.token), 'agent-net-on');
  }, 60_000);

  afterAll(async () => {
    await driver?.end().catch(() => {});
    await open?.stop('SIGKILL');
    abstract?.kill('SIGKILL');
    await new Promise((resolve) => tcp?.close(resolve));
    rmSync(folder, { recursive: true, force: true });
  }, 30_000);

  it('reaches TCP on the host\'s network, but no abstract Unix socket of the host', async () => {
    const text = await send(`socat -T 3 - TCP:127.0.0.1:${tcpPort} </dev/null; socat -T 3 - ABSTRACT-CONNECT:${abstractName} </dev/null && echo CONNECTED; true`);
    expect(text).toContain('HELLO OVER TCP');
    expect(text).not.toMatch(/HELLO FROM AN ABSTRACT SOCKET|CONNECTED/);
    expect(existsSync(join(folder, 'abstract-reached'))).toBe(false);
  });

  it('cannot make the workspace a repository: the root .git is reserved read-only; a sub-folder\'s repository works', async () => {
    const text = await send(
      [
        'git init -q && echo ROOT-INIT',
        'echo "gitdir: /tmp/g" > .git && echo POINTED',
        'mkdir .git/hooks && echo HOOKS',
        'cd sub && git init -q && git -c user.email=a@example.com -c user.name=A commit -q --allow-empty -m first && echo SUB-COMMITTED',
      ].join('; '),
    );
    expect(text).not.toMatch(/ROOT-INIT|POINTED|HOOKS/);
    expect(text).toContain('SUB-COMMITTED');
    expect(existsSync(join(folder, 'workspace', '.git', 'config'))).toBe(false);
  });

  it('every sidecar\'s state under ~/.local/state/tools-runtime is hidden, not only this one\'s', async () => {
    const root = join(home2, '.local', 'state', 'tools-runtime');
    const text = await send(`cat ${root}/0123abcd/screen; ls -A ${root}; echo END`);
    expect(text).toContain('END');
    expect(text).not.toMatch(/OTHER-AGENT-STATE|^0123abcd$/m);
    const read = await driver.call('s1', 'read_file', { path: 'home/.local/state/tools-runtime/0123abcd/screen' });
    expect(read.error?.code).toBe('sandbox_denied');
  });
});
