/**
 * The Go forwarder (ipam-plugin/forwarder/) as the runtime runs it — `blockipam` in a CNI bin
 * directory with the TypeScript executable beside it as `blockipam-direct` — against a stand-in
 * agent speaking wire v3 that the test controls (helpers/raw-agent.ts): the request it frames,
 * the answer passed through, the hand-off (NOT_SERVED, no READY in time, a close before READY →
 * the direct path; after GO never, but for STATUS and an unanswered DEL), the version skew of a rolling upgrade in both
 * directions, and each call that goes to the direct path without asking — shown by the direct
 * path's own answer ("kubeconfig unavailable" naming the netconf's kubeconfig: only the
 * TypeScript executable reads one) and the stand-in's connection count.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { version } from 'blockipam/core/cni/version';
import { ensurePlugin, forwardedPlugin, repoRoot, runPlugin, type PluginRun } from './helpers/plugin-exe.ts';
import { rawAgent, resultBytes, type RawAgent } from './helpers/raw-agent.ts';

/** The commit before wire v3: its forwarder speaks v2, at the unversioned socket path. */
const V2_COMMIT = '0e9dcc4'; // a landed commit on main: never rewritten

/** The CNI environment of an ADD (or `command`) of container `id`. */
const cniEnv = (command = 'ADD', id = 'fwd1'): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_NETNS: '/var/run/netns/x',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
});

void describe('the Go forwarder', () => {
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
  /** A netconf naming the stand-in's socket and a kubeconfig that does not exist. */
  const conf = (ipam: Record<string, unknown> = {}, top: Record<string, unknown> = {}): string =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'fwdnet',
      type: 'ptp',
      ipam: { type: 'blockipam', agentSocket: agent.socket, kubeconfig: kubeconfig(), ...ipam },
      ...top,
    });
  const run = (env: Record<string, string>, stdin: string | Buffer, bin = exe): Promise<PluginRun> =>
    runPlugin(env, stdin, bin);
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
  /** The direct path answered (its kubeconfig error), logging why the agent did not serve it. */
  const directAnswered = (r: PluginRun, why?: RegExp): void => {
    const doc = cniError(r, 11);
    assert.equal(doc.msg, 'kubeconfig unavailable');
    assert.match(String(doc.details), new RegExp(`cannot read kubeconfig ${kubeconfig()}`));
    if (why) assert.match(r.stderr, new RegExp(`node agent did not serve the call.*${why.source}`));
  };
  /** Runs `f` and asserts the stand-in saw no connection meanwhile. */
  const noConnection = async (f: () => Promise<void>): Promise<void> => {
    const was = agent.connections;
    await f();
    assert.equal(agent.connections, was, 'the agent was not asked');
  };

  void it('frames the call: v3, its deadline, the CNI_* variables that are set, stdin as raw bytes', async () => {
    agent.reply = () => ({ ready: { code: 0, stdout: '' } });
    // not UTF-8: the bytes travel as they are (the agent decodes them)
    const stdin = Buffer.concat([
      Buffer.from(conf({ timeoutMs: 4000 }).slice(0, -1)),
      Buffer.from(',"x":"\xff"}', 'latin1'),
    ]);
    const env = { ...cniEnv('DEL'), CNI_ARGS: 'K8S_POD_NAME=p', OTHER: 'not forwarded' };
    const from = process.hrtime.bigint();
    const gos = agent.gos;
    const r = await run(env, stdin);
    const to = process.hrtime.bigint();
    assert.equal(r.status, 0, r.stdout);
    const got = agent.requests.at(-1);
    assert.ok(got);
    assert.equal(got.version, 3);
    const { OTHER: _other, ...forwarded } = env;
    assert.deepEqual(got.env, forwarded);
    assert.ok(got.stdin.equals(stdin), 'stdin byte for byte');
    // the client's deadline: CLOCK_MONOTONIC at its start plus ipam.timeoutMs
    assert.ok(
      got.deadlineNs >= from + 4_000_000_000n && got.deadlineNs <= to + 4_000_000_000n,
      String(got.deadlineNs),
    );
    assert.equal(agent.gos, gos + 1, 'GO after READY');
  });

  void it('passes the RESULT through: stdout, stderr, exit code; logs it to ipam.logFile', async () => {
    const logFile = join(tmp, 'fwd.log');
    agent.reply = () => ({ ready: { code: 1, stdout: '{"code":100}\n', stderr: '{"level":"warn"}\n' } });
    const r = await run(cniEnv(), conf({ logFile }));
    assert.deepEqual([r.status, r.stdout, r.stderr], [1, '{"code":100}\n', '{"level":"warn"}\n']);
    const lines = readFileSync(logFile, 'utf8').trim().split('\n');
    assert.equal(lines[0], '{"level":"warn"}');
    const done = JSON.parse(lines[1] ?? '{}') as Record<string, unknown>;
    assert.deepEqual(
      [done.msg, done.code, done.path, done.cmd, done.network],
      ['done', 1, 'agent', 'ADD', 'fwdnet'],
    );
  });

  void it('NOT_SERVED: the direct path, with the reason', async () => {
    agent.reply = () => ({ notServed: 'not synced yet: pools' });
    directAnswered(await run(cniEnv(), conf()), /not served: not synced yet: pools/);
  });

  void it('a close before READY, or bytes of another protocol: the direct path', async () => {
    agent.reply = () => ({ close: true });
    directAnswered(await run(cniEnv(), conf()), /no READY/);
    // an agent of v2 at the v3 path would answer a JSON line
    agent.reply = () => ({ raw: Buffer.from('{"v":2,"code":1,"stdout":"","stderr":""}\n') });
    directAnswered(await run(cniEnv(), conf()), /not a v3 agent/);
  });

  void it('no READY within the ack bound and no heartbeat (a stopped agent): the direct path, no GO sent', async () => {
    agent.reply = () => ({ silent: true });
    const gos = agent.gos;
    directAnswered(await run(cniEnv(), conf()), /no READY within 2s/);
    assert.equal(agent.gos, gos);
  });

  void it('READY after the ack bound while the heartbeat beats (a busy agent): the agent serves it', async () => {
    agent.reply = () => ({ ready: { code: 0, stdout: '{"served":"late"}\n' }, readyAfterMs: 3_000 });
    const gos = agent.gos;
    agent.heartbeat = true;
    try {
      const r = await run(cniEnv(), conf());
      assert.deepEqual([r.status, r.stdout], [0, '{"served":"late"}\n'], r.stderr);
      assert.equal(agent.gos, gos + 1);
    } finally {
      agent.heartbeat = false;
    }
    // the same agent without its heartbeat: the direct path at the bound, no GO
    directAnswered(await run(cniEnv(), conf()), /no READY within 2s/);
    assert.equal(agent.gos, gos + 1);
  });

  void it('a heartbeat but no READY: the direct path once half of ipam.timeoutMs is gone', async () => {
    agent.reply = () => ({ silent: true });
    agent.heartbeat = true;
    try {
      directAnswered(await run(cniEnv(), conf({ timeoutMs: 8_000 })), /no READY within 4s/);
    } finally {
      agent.heartbeat = false;
    }
  });

  void it('after GO an ADD never falls back: a close is CNI 11, no answer by ipam.timeoutMs CNI 11, garbage 999', async () => {
    agent.reply = () => ({ ready: { close: true } });
    assert.equal(cniError(await run(cniEnv(), conf()), 11).msg, 'node agent: no answer');
    agent.reply = () => ({ ready: { silent: true } });
    assert.equal(cniError(await run(cniEnv(), conf({ timeoutMs: 300 })), 11).msg, 'node agent: no answer');
    agent.reply = () => ({ ready: { raw: Buffer.from('{"v":2,"code":0}\n') } });
    assert.equal(cniError(await run(cniEnv(), conf()), 999).msg, 'node agent: malformed answer');
    agent.reply = () => ({ ready: { raw: resultBytes(0, 'xyz').subarray(0, 11) } });
    assert.equal(cniError(await run(cniEnv(), conf()), 11).msg, 'node agent: no answer');
  });

  void it('a DEL the agent does not answer after GO goes to the direct path: a release by handle is idempotent', async () => {
    agent.reply = () => ({ ready: { close: true } });
    const gos = agent.gos;
    /** The DEL's exit 0 from the direct path, which the forwarder's warning names with `why`. */
    const directDel = (r: PluginRun, why: RegExp): void => {
      assert.equal(r.status, 0, r.stdout);
      assert.match(r.stderr, new RegExp(`node agent did not serve the call.*"cmd":"DEL".*${why.source}`));
    };
    directDel(await run(cniEnv('DEL'), conf()), /EOF/);
    agent.reply = () => ({ ready: { silent: true } });
    directDel(await run(cniEnv('DEL'), conf({ timeoutMs: 300 })), /i\/o timeout|deadline/);
    assert.equal(agent.gos, gos + 2, 'both DELs were started at the agent (GO sent)');
    // an answer, even a malformed one, is the agent's: no second release
    agent.reply = () => ({ ready: { raw: Buffer.from('{"v":2,"code":0}\n') } });
    assert.equal(cniError(await run(cniEnv('DEL'), conf()), 999).msg, 'node agent: malformed answer');
  });

  void it('STATUS falls back within its own budget even after GO: a stalled agent never fails it', async () => {
    agent.reply = () => ({ ready: { silent: true } });
    const status = () => run({ CNI_COMMAND: 'STATUS' }, conf({}, { cniVersion: '1.1.0' }));
    const r = await status();
    assert.equal(cniError(r, 11).msg, 'kubeconfig unavailable', 'the direct path answered');
    assert.match(r.stderr, /node agent did not serve the call/);
    agent.reply = () => ({ silent: true });
    assert.equal(cniError(await status(), 11).msg, 'kubeconfig unavailable');
  });

  void it('calls the rule keeps from the agent go to the direct path unasked', async () => {
    await noConnection(async () => {
      const v = await run({ CNI_COMMAND: 'VERSION' }, conf({}, { cniVersion: '0.4.0' }));
      assert.equal(v.stdout, `${JSON.stringify(version(conf({}, { cniVersion: '0.4.0' })))}\n`);
      directAnswered(await run(cniEnv(), conf({ mode: 'standalone' })));
      assert.match(String(cniError(await run(cniEnv(), conf({ timeoutMs: 50 })), 7).details), /timeoutMs/);
      assert.equal(cniError(await run(cniEnv(), 'not json'), 6).msg, 'error unmarshalling network config');
      assert.equal(cniError(await run(cniEnv(), conf({ agentSocket: 'relative.sock' })), 7).code, 7);
      // keys match exactly, as core's: to the direct path "AgentSocket" and "MODE" are unknown fields
      const miscased = JSON.stringify({
        cniVersion: '1.0.0',
        name: 'fwdnet',
        ipam: { type: 'blockipam', AgentSocket: agent.socket, kubeconfig: kubeconfig() },
      });
      assert.match(
        String(cniError(await run(cniEnv(), miscased), 7).details),
        /ipam\.AgentSocket: unknown field/,
      );
      assert.match(String(cniError(await run(cniEnv(), conf({ mode: '' })), 7).details), /ipam\.mode/);
      const modes = conf({ mode: 'standalone', MODE: 'agent' });
      assert.match(String(cniError(await run(cniEnv(), modes), 7).details), /ipam\.MODE: unknown field/);
      // a socket path whose versioned path (.v3 appended) would not fit sun_path
      const long = conf({ agentSocket: `/${'a'.repeat(104)}` });
      assert.match(
        String(cniError(await run(cniEnv(), long), 7).details),
        /ipam\.agentSocket: 105 bytes, at most 104/,
      );
      // over the agent's 1 MiB: the direct path reads it whole
      directAnswered(await run(cniEnv(), conf({}, { pad: 'x'.repeat((1 << 20) + 10) })));
    });
  });

  void it("no direct path to exec: CNI 999 naming the file, in the netconf's cniVersion", async () => {
    const lone = forwardedPlugin(join(tmp, 'lone-bin'), join(tmp, 'no-such-direct'));
    const r = await run(cniEnv(), conf({ mode: 'standalone' }, { cniVersion: '0.4.0' }), lone);
    const doc = cniError(r, 999);
    assert.deepEqual([doc.cniVersion, doc.msg], ['0.4.0', 'cannot run the direct path']);
    assert.match(String(doc.details), /lone-bin\/blockipam-direct: no such file/);
    assert.match(r.stderr, /"level":"error","msg":"cannot run the direct path"/);
    // VERSION reads no netconf: the newest version
    const v = await run({ CNI_COMMAND: 'VERSION' }, conf(), lone);
    assert.equal(cniError(v, 999).cniVersion, '1.1.0');
  });

  void it('version skew: a v2 agent (old path) and a v2 forwarder (old path) both meet the direct path', async () => {
    // new forwarder, old agent: the agent listens at the unversioned path; connect() to .v3 fails
    const old = await rawAgent(join(tmp, 'old-agent.sock'));
    directAnswered(
      await run(cniEnv(), conf({ agentSocket: join(tmp, 'old-agent.sock') })),
      /dial unix .*\.v3: connect: no such file/,
    );
    assert.equal(old.connections, 0);
    await old.close();
    // old forwarder, new agent: the v2 forwarder of V2_COMMIT connects to the unversioned path
    const bin = join(tmp, 'v2-bin');
    mkdirSync(bin);
    const src = join(tmp, 'v2-src');
    mkdirSync(src);
    const files = spawnSync('git', ['ls-tree', '--name-only', V2_COMMIT, 'ipam-plugin/forwarder/'], {
      cwd: repoRoot,
      encoding: 'utf8',
    });
    assert.ok(files.status === 0 && files.stdout.trim() !== '', `git ls-tree ${V2_COMMIT}: ${files.stderr}`);
    for (const f of files.stdout.trim().split('\n'))
      writeFileSync(
        join(src, f.split('/').at(-1) as string),
        spawnSync('git', ['show', `${V2_COMMIT}:${f}`], { cwd: repoRoot }).stdout,
      );
    const go = spawnSync('go', ['build', '-o', join(bin, 'blockipam'), '.'], {
      cwd: src,
      encoding: 'utf8',
      env: { ...process.env, CGO_ENABLED: '0', PATH: `/usr/local/go/bin:${process.env.PATH ?? ''}` },
    });
    assert.equal(go.status, 0, go.stderr);
    symlinkSync(ensurePlugin(), join(bin, 'blockipam-direct'));
    await noConnection(async () => {
      const r = await run(cniEnv(), conf(), join(bin, 'blockipam'));
      const doc = cniError(r, 11);
      assert.equal(doc.msg, 'kubeconfig unavailable', 'the old forwarder took its direct path');
    });
  });
});
