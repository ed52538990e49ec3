/**
 * The native forwarder (ipam-plugin/forwarder/) as the runtime runs it — `blockipam` in a CNI
 * bin directory with the TypeScript executable beside it as `blockipam-direct` — against a
 * stand-in agent on a Unix socket that the test controls (test/plugin/helpers/raw-agent.ts):
 * the v2 request it sends, the answer passed through verbatim, every fault of the raw CNI call
 * wire, and each case that goes to the direct path, shown by the direct path's own answer
 * ("kubeconfig unavailable" naming the netconf's kubeconfig: only the TypeScript executable
 * reads a kubeconfig).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DIRECT_ENV, forwardTarget, MAX_FORWARD_DEPTH, requestBytes } from 'blockipam/core/cni/forward';
import { version } from 'blockipam/core/cni/version';
import { callRequest, MAX_REQUEST_BYTES } from 'blockipam/core/node-ipam/protocol';
import { ensurePlugin, forwardedPlugin, repoRoot, runPlugin, type PluginRun } from './helpers/plugin-exe.ts';
import { ensureMultiCall } from '../helpers/multi-call.ts';
import { rawAgent, v2Answer, type RawAgent } from './helpers/raw-agent.ts';

const MiB = 1 << 20;

/** The CNI environment of an ADD (or `command`) of container `id`. */
const cniEnv = (command = 'ADD', id = 'fwd1'): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_NETNS: '/var/run/netns/x',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
});

void describe('the native forwarder', () => {
  let tmp: string;
  let exe: string;
  let agent: RawAgent;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'bipam-fwd-'));
    exe = forwardedPlugin(join(tmp, 'bin'));
    agent = await rawAgent();
  });
  after(async () => {
    await agent?.close();
    rmSync(tmp, { recursive: true, force: true });
  });
  const kubeconfig = () => join(tmp, 'no-kubeconfig');
  /** A netconf naming `socket` (default the stand-in's) and a kubeconfig that does not exist. */
  const conf = (ipam: Record<string, unknown> = {}, top: Record<string, unknown> = {}): string =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'fwdnet',
      type: 'ptp',
      ipam: { type: 'blockipam', agentSocket: agent.socket, kubeconfig: kubeconfig(), ...ipam },
      ...top,
    });
  const run = (env: Record<string, string>, stdin: string): Promise<PluginRun> => runPlugin(env, stdin, exe);
  /** The one CNI error document on stdout, exit 1, with `code`. */
  const cniError = (r: PluginRun, code: number): Record<string, unknown> => {
    assert.equal(
      r.status,
      1,
      `exit status; stdout ${r.stdout.slice(0, 500)} stderr ${r.stderr.slice(0, 500)}`,
    );
    assert.ok(r.json, `one JSON document on stdout: ${r.stdout.slice(0, 500)}`);
    assert.equal(r.json.code, code, r.stdout.slice(0, 500));
    return r.json;
  };
  /** The direct path answered: its error reading the netconf's kubeconfig. */
  const directAnswered = (r: PluginRun): void => {
    const doc = cniError(r, 11);
    assert.equal(doc.msg, 'kubeconfig unavailable');
    assert.match(String(doc.details), new RegExp(`cannot read kubeconfig ${kubeconfig()}`));
  };

  void it('forwards the CNI_* variables that are set and stdin whole as one v2 line', async () => {
    const before = agent.lines.length;
    agent.reply = () => v2Answer(0, '{"cniVersion":"1.0.0","ips":[]}\n');
    const stdin = conf({}, { note: 'ünïcode <&> "quoted"\n' });
    const env = { ...cniEnv('DEL'), CNI_ARGS: 'K8S_POD_NAME=p', OTHER: 'not forwarded' };
    const r = await run(env, stdin);
    assert.equal(r.status, 0, r.stdout);
    assert.equal(agent.lines.length, before + 1);
    assert.deepEqual(JSON.parse(agent.lines.at(-1) as string), {
      v: 2,
      env: {
        CNI_COMMAND: 'DEL',
        CNI_CONTAINERID: 'fwd1',
        CNI_NETNS: '/var/run/netns/x',
        CNI_IFNAME: 'eth0',
        CNI_PATH: '/opt/cni/bin',
        CNI_ARGS: 'K8S_POD_NAME=p',
      },
      stdin,
    });
    // byte for byte the TypeScript client's line: both clients size a request alike
    assert.equal(agent.lines.at(-1), JSON.stringify(callRequest(env, stdin)));
  });
  void it('passes the answer through verbatim: stdout, stderr and exit code', async () => {
    const stdout = '{"cniVersion":"1.0.0","code":7,"msg":"bad"}'; // no newline: written as is
    const stderr = '{"level":"error","msg":"bad ✓"}\nsecond line\n';
    agent.reply = () => v2Answer(7, stdout, stderr);
    const r = await run(cniEnv(), conf());
    assert.equal(r.status, 7);
    assert.equal(r.stdout, stdout);
    assert.equal(r.stderr, stderr);
    agent.reply = () => v2Answer(0, 'result\n', '');
    const ok = await run(cniEnv('STATUS'), conf());
    assert.deepEqual([ok.status, ok.stdout, ok.stderr], [0, 'result\n', '']);
  });
  void it('logs a forwarded call to ipam.logFile as the TypeScript executable does', async () => {
    const logFile = join(tmp, 'plugin.log');
    agent.reply = () => v2Answer(0, 'result\n', '{"level":"warn","msg":"from the agent"}\n');
    const ok = await run(cniEnv('ADD', 'logged1'), conf({ logFile }));
    assert.equal(ok.status, 0, ok.stdout);
    agent.reply = () => ({ close: true });
    const failed = await run(cniEnv('DEL', 'logged2'), conf({ logFile }));
    cniError(failed, 11);
    assert.match(failed.stderr, /"level":"error","msg":"node agent closed the connection without an answer"/);
    const lines = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines[0]?.msg, 'from the agent');
    assert.deepEqual(
      lines.slice(1).map((l) => [l.level, l.msg, l.cmd, l.containerID, l.network, l.path, l.code]),
      [
        ['info', 'done', 'ADD', 'logged1', 'fwdnet', 'agent', 0],
        [
          'error',
          'node agent closed the connection without an answer',
          'DEL',
          'logged2',
          'fwdnet',
          'agent',
          11,
        ],
        ['info', 'done', 'DEL', 'logged2', 'fwdnet', 'agent', 1],
      ],
    );
    assert.equal(typeof lines[1]?.durationMs, 'number');
    assert.equal(statSync(logFile).mode & 0o777, 0o600);
    // logLevel warn: no done lines
    const quiet = join(tmp, 'quiet.log');
    agent.reply = () => v2Answer(0, 'result\n', '');
    assert.equal((await run(cniEnv(), conf({ logFile: quiet, logLevel: 'warn' }))).status, 0);
    assert.equal(existsSync(quiet), false);
  });
  void it('a socket path the schema refuses never reaches connect(): the direct path names the field', async () => {
    // "@name" would be an abstract socket (any process of the network namespace may own one):
    // one is listening here, and must see no connection
    const abstract = `blockipam-fwd-${process.pid}`;
    let stolen = 0;
    const thief = createServer((c) => {
      stolen++;
      c.destroy();
    });
    await new Promise<void>((resolve) => thief.listen(`\0${abstract}`, resolve));
    const before = agent.connections;
    try {
      cniError(await run(cniEnv(), conf({ agentSocket: `@${abstract}` })), 7);
    } finally {
      await new Promise((resolve) => thief.close(resolve));
    }
    assert.equal(stolen, 0, 'the abstract socket got the call');
    for (const agentSocket of [
      '@blockipam-abstract',
      'relative.sock',
      `${agent.socket}\u0000junk`,
      `/${'a'.repeat(107)}`,
    ]) {
      const doc = cniError(await run(cniEnv(), conf({ agentSocket })), 7);
      assert.match(
        String(doc.details),
        /agentSocket/,
        `${JSON.stringify(agentSocket)}: ${JSON.stringify(doc)}`,
      );
    }
    assert.equal(agent.connections, before);
  });
  void it('VERSION: the direct path answers, and the agent gets no connection', async () => {
    const before = agent.connections;
    const r = await run({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.4.0"}');
    assert.equal(r.status, 0, r.stdout);
    assert.equal(r.json?.cniVersion, '0.4.0');
    assert.ok(Array.isArray(r.json?.supportedVersions), r.stdout);
    assert.equal(agent.connections, before);
  });
  void it('ipam.mode standalone: the direct path, no connection', async () => {
    const before = agent.connections;
    directAnswered(await run(cniEnv(), conf({ mode: 'standalone' })));
    assert.equal(agent.connections, before);
  });
  void it('stdin not JSON: the direct path validates it', async () => {
    const before = agent.connections;
    const doc = cniError(await run(cniEnv(), 'not json'), 6);
    assert.equal(doc.msg, 'error unmarshalling network config');
    assert.equal(agent.connections, before);
  });
  void it('no socket file (ENOENT): the direct path serves the call', async () => {
    directAnswered(await run(cniEnv(), conf({ agentSocket: join(tmp, 'no-agent.sock') })));
  });
  void it('a socket file nobody listens on (ECONNREFUSED): the direct path serves the call', async () => {
    const socket = join(tmp, 'dead-agent.sock');
    // an agent that died: listening, then SIGKILLed, its socket file left behind
    const child = spawn(
      process.execPath,
      ['-e', `require('node:net').createServer().listen(${JSON.stringify(socket)}, () => console.log('up'))`],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.kill('SIGKILL');
    await new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const r = await run(cniEnv(), conf({ agentSocket: socket }));
    directAnswered(r);
    // told by the forwarder (BLOCKIPAM_DIRECT), not by a second connect()
    const warn = JSON.parse(r.stderr.split('\n')[0] ?? '') as Record<string, unknown>;
    assert.deepEqual(
      [warn.msg, warn.errno, warn.agentSocket],
      ['node agent unreachable: taking the direct path', 'ECONNREFUSED', socket],
    );
    unlinkSync(socket);
  });
  void it('accepted but never answered: CNI 11 after ipam.timeoutMs, no direct path', async () => {
    agent.reply = () => ({ silent: true });
    const t0 = performance.now();
    const doc = cniError(await run(cniEnv(), conf({ timeoutMs: 400 })), 11);
    const took = performance.now() - t0;
    assert.equal(doc.msg, 'node agent did not answer in time');
    assert.equal(doc.cniVersion, '1.0.0');
    assert.match(String(doc.details), /no answer within 400 ms .*not retried on the direct path/);
    assert.ok(took >= 400 && took < 10_000, `answered after ${Math.round(took)} ms`);
  });
  void it('closed without an answer: CNI 11', async () => {
    agent.reply = () => ({ close: true });
    const doc = cniError(await run(cniEnv(), conf()), 11);
    assert.equal(doc.msg, 'node agent closed the connection without an answer');
  });
  void it('an answer that is not JSON, or not the v2 shape: CNI 999 naming the problem', async () => {
    const cases: readonly [string, RegExp][] = [
      ['<html>proxy</html>\n', /^not JSON/],
      ['{"v":1,"code":0,"stdout":"","stderr":""}\n', /^response: protocol version 1, this plugin speaks 2 /],
      ['{"v":2,"code":"0","stdout":"","stderr":""}\n', /^response\.code: "0" is not an integer 0–255$/],
      ['{"v":2,"code":256,"stdout":"","stderr":""}\n', /^response\.code: 256 is not an integer 0–255$/],
      ['{"v":2,"code":0,"stderr":""}\n', /^response\.stdout: not a string$/],
      ['[1,2]\n', /^response: not a JSON object$/],
    ];
    for (const [raw, problem] of cases) {
      agent.reply = () => ({ raw });
      const doc = cniError(await run(cniEnv(), conf()), 999);
      assert.equal(doc.msg, 'node agent answer malformed', raw);
      assert.match(String(doc.details), problem, raw);
    }
  });
  void it('an answer over 1 MiB: CNI 999', async () => {
    agent.reply = () => ({ raw: `{"v":2,"code":0,"stdout":"${'x'.repeat(MiB + 10)}","stderr":""}\n` });
    const doc = cniError(await run(cniEnv(), conf()), 999);
    assert.equal(doc.msg, 'node agent answer malformed');
    assert.match(String(doc.details), /more than 1048576 bytes without a newline/);
  });
  void it("a request over the agent's 1 MiB goes to the direct path; stdin over 64 MiB is CNI 6", async () => {
    const before = agent.connections;
    // a GC listing tens of thousands of attachments: the direct path serves it, not a 6 or a 999
    directAnswered(await run(cniEnv('GC'), conf({}, { cniVersion: '1.1.0', pad: 'x'.repeat(MiB) })));
    assert.equal(agent.connections, before);
    const doc = cniError(await run(cniEnv(), conf({}, { pad: 'x'.repeat(64 * MiB) })), 6);
    assert.equal(doc.msg, 'network configuration too large');
    assert.equal(doc.details, `stdin holds more than ${64 * MiB} bytes`);
    assert.equal(agent.connections, before);
  });
  void it('both clients (Go forwarder, Bun executable) decide alike: core/cni/forward.ts forwardTarget', async () => {
    agent.reply = () => v2Answer(0, 'forwarded\n');
    const env = cniEnv('GC', 'same1');
    const ts = ensurePlugin();
    /**
     * stdin whose request line is exactly MAX_REQUEST_BYTES + `over` bytes: `pad` is `unit`
     * (bytes inside a JSON string, as given: ill-formed UTF-8 reaches both clients as it is)
     * repeated, `fill` tops it up with 1-byte 'x's.
     */
    const sized = (unit: Buffer, over: number): Buffer => {
      const text = (pad: string, fill: string): string => conf({}, { cniVersion: '1.1.0', pad, fill });
      const decoded = JSON.parse(`"${unit.toString('utf8')}"`) as string;
      const base = requestBytes(env, text('', ''));
      const per = requestBytes(env, text(decoded, '')) - base;
      const n = Math.floor((MAX_REQUEST_BYTES - base) / per);
      const fill = 'x'.repeat(MAX_REQUEST_BYTES - requestBytes(env, text(decoded.repeat(n), '')) + over);
      const [head, tail] = text('', fill).split('"pad":""') as [string, string];
      return Buffer.concat([
        Buffer.from(`${head}"pad":"`),
        Buffer.alloc(unit.length * n, unit),
        Buffer.from(`"${tail}`),
      ]);
    };
    const deep = (levels: number): Buffer =>
      Buffer.from(
        conf({}, { cniVersion: '1.1.0', d: 0 }).replace(
          '"d":0',
          `"d":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}`,
        ),
      );
    const cases: [string, Buffer][] = [];
    const units: [string, Buffer][] = [
      ['ASCII', Buffer.from('x')],
      ['quotes and backslashes', Buffer.from('\\"\\\\')],
      ['multi-byte', Buffer.from('é✓😀')],
      ['escaped newlines', Buffer.from('\\n')],
      // ill-formed UTF-8: E2 82 (one U+FFFD), ED A0 80 (a surrogate: three), C0, FF
      ['ill-formed UTF-8', Buffer.from([0xe2, 0x82, 0x41, 0xed, 0xa0, 0x80, 0xc0, 0xff])],
    ];
    for (const [what, unit] of units)
      for (const over of [0, 1])
        cases.push([`${what}, request ${over ? 'one byte over' : 'at'} the bound`, sized(unit, over)]);
    cases.push(
      ['nested at the limit', deep(MAX_FORWARD_DEPTH)],
      ['nested one level deeper', deep(MAX_FORWARD_DEPTH + 1)],
    );
    for (const [what, stdin] of cases) {
      const expected = forwardTarget(env, stdin.toString('utf8')) !== undefined;
      const lines: string[] = [];
      for (const client of [exe, ts]) {
        const before = agent.connections;
        const r = await runPlugin(env, stdin, client);
        const forwarded = agent.connections > before;
        assert.equal(forwarded, expected, `${what}: ${client} ${forwarded ? 'forwarded' : 'went direct'}`);
        if (forwarded) {
          assert.deepEqual([r.status, r.stdout], [0, 'forwarded\n'], what);
          lines.push(agent.lines.at(-1) as string);
        } else directAnswered(r);
      }
      if (expected) assert.equal(lines[0], lines[1], `${what}: both clients send the same line`);
    }
    // the table holds both outcomes of each pair
    assert.deepEqual(
      cases.map(([, stdin]) => forwardTarget(env, stdin.toString('utf8')) !== undefined),
      [true, false, true, false, true, false, true, false, true, false, true, false],
    );
  });
  void it("the direct path exec'd by the forwarder is told so (BLOCKIPAM_DIRECT) and never connects", async () => {
    // a stand-in direct path that prints the marker it got
    const bin = join(tmp, 'bin-marker');
    const script = join(tmp, 'print-marker');
    writeFileSync(script, `#!/bin/sh\nprintf '%s' "$${DIRECT_ENV}"\n`);
    chmodSync(script, 0o755);
    const marked = forwardedPlugin(bin, script);
    assert.equal((await runPlugin(cniEnv(), conf({ mode: 'standalone' }), marked)).stdout, '1');
    const none = join(tmp, 'none.sock');
    assert.equal((await runPlugin(cniEnv(), conf({ agentSocket: none }), marked)).stdout, `ENOENT ${none}`);
    // one the runtime set is replaced, not doubled
    const r = await runPlugin({ ...cniEnv(), [DIRECT_ENV]: 'stale' }, conf({ mode: 'standalone' }), marked);
    assert.equal(r.stdout, '1');
    // the TypeScript executable with the marker: the direct path, though the netconf names a
    // socket that is listening
    const before = agent.connections;
    for (const value of ['1', `ECONNREFUSED ${agent.socket}`]) {
      const direct = await runPlugin({ ...cniEnv(), [DIRECT_ENV]: value }, conf(), ensurePlugin());
      directAnswered(direct);
    }
    assert.equal(agent.connections, before);
  });
  void it('an answer cut off before its newline: CNI 11, not 999', async () => {
    for (const raw of ['{"v":2,"code":0,"std', '{"v":2,"code":0,"stdout":"","stderr":""}']) {
      agent.reply = () => ({ raw });
      const doc = cniError(await run(cniEnv(), conf()), 11);
      assert.equal(doc.msg, 'node agent answer incomplete', raw);
      assert.match(
        String(doc.details),
        new RegExp(`after ${raw.length} bytes of the answer, before its newline`),
      );
    }
  });
  void it('blockipam-direct the multi-call executable (the image): argv[0] "blockipam" picks its plugin role', async () => {
    const mc = forwardedPlugin(join(tmp, 'bin-multi-call'), ensureMultiCall());
    directAnswered(await runPlugin(cniEnv(), conf({ mode: 'standalone' }), mc));
    const r = await runPlugin({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.1.0"}', mc);
    assert.equal(r.json?.cniVersion, '1.1.0', r.stdout);
  });
  void it('blockipam-direct missing: a CNI error naming its path', async () => {
    const bin = join(tmp, 'bin-no-direct');
    const lone = forwardedPlugin(bin);
    unlinkSync(join(bin, 'blockipam-direct'));
    const doc = cniError(await runPlugin(cniEnv(), conf({ mode: 'standalone' }), lone), 999);
    assert.equal(doc.msg, 'cannot run the direct path');
    assert.match(String(doc.details), new RegExp(`^${join(bin, 'blockipam-direct')}: no such file`));
    assert.equal(doc.cniVersion, '1.0.0');
    // VERSION needs no direct path: the forwarder answers it, byte for byte as core's VERSION
    for (const stdin of ['{"cniVersion":"0.4.0"}', '{"cniVersion":"9.9.9"}', 'not json', '']) {
      const v = await runPlugin({ CNI_COMMAND: 'VERSION' }, stdin, lone);
      assert.deepEqual([v.status, v.stdout], [0, `${JSON.stringify(version(stdin))}\n`], stdin);
    }
  });
});

void describe('the forwarder build: scripts/build-plugin.ts --forwarder --target', () => {
  /** Runs the build script with `args`. */
  const build = (...args: string[]) =>
    spawnSync(process.execPath, [join(repoRoot, 'scripts', 'build-plugin.ts'), '--forwarder', ...args], {
      cwd: repoRoot,
      encoding: 'utf8',
    });
  /** ELF e_machine of the file at `path` (0x3e x86-64, 0xb7 AArch64). */
  const machine = (path: string): number => readFileSync(path).readUInt16LE(18);
  void it('builds for the architecture of the Bun target, each at its own path', () => {
    for (const [target, arch, elf] of [
      ['bun-linux-arm64', 'arm64', 0xb7],
      ['bun-linux-x64-baseline', 'amd64', 0x3e],
    ] as const) {
      const r = build('--target', target);
      assert.equal(r.status, 0, r.stderr);
      const path = r.stdout.trim();
      assert.equal(path, join(repoRoot, 'build', 'forwarder', `linux-${arch}`, 'blockipam-forwarder'));
      assert.equal(machine(path), elf, target);
    }
  });
  void it('refuses a target it cannot build for, by name', () => {
    const r = build('--target', 'bun-darwin-arm64');
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /--forwarder --target bun-darwin-arm64: the forwarder builds for Linux amd64 and arm64 only/,
    );
  });
});
