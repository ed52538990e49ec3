/**
 * The two halves together: the real plugin as the agent installs it from the image (the native
 * forwarder as `blockipam`, the TypeScript executable beside it as `blockipam-direct`; netconf
 * `ipam.agentSocket`) forwarding to the real agent's IPAM server, on the real API server. The
 * agent — not the plugin's direct path — serves each call: its request counter moves, and the
 * allocation it wrote is on the API server. With the agent SIGSTOPped, ADD, STATUS and DEL fall
 * back to the direct path, and after SIGCONT the agent starts none of the calls whose clients
 * left (at most one allocator per call).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  assertAdded,
  assertSilentSuccess,
  env,
  envNoAttachment,
  handle,
  installForwarded,
  NODE,
  setupSuite,
  type Suite,
} from '../plugin/helpers/conformance.ts';
import { runPlugin } from '../plugin/helpers/plugin-exe.ts';
import { eventually, scrape, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';

describe('the plugin forwards to the agent', () => {
  let s: Suite;
  let agent: AgentProcess;
  let dir: string;
  let conf: string;
  let run: Suite['run'];
  const served = async (op: string, outcome: string): Promise<number> => {
    const re = new RegExp(
      `blockipam_agent_ipam_requests_total\\{[^}]*op="${op}",outcome="${outcome}"[^}]*\\} (\\d+)`,
    );
    return Number(re.exec((await scrape(agent)).text)?.[1] ?? 0);
  };

  before(async () => {
    s = setupSuite();
    dir = mkdtempSync(join(tmpdir(), 'plugin-agent-'));
    const exe = join(await installForwarded(join(dir, 'cni-bin')), 'blockipam');
    run = (e, stdin) => runPlugin(e, stdin, exe);
    const socket = join(dir, 'agent', 'ipam.sock');
    agent = startAgent(NODE, ['--ipam-socket', socket, '--upkeep-seconds', '1']);
    conf = s.conf('1.1.0', { agentSocket: socket });
    // ready once the agent serves and has synced: a CHECK of nothing through the plugin that
    // the agent answered "missing" (before its socket exists the plugin takes its direct path;
    // before its first sync the agent answers code 11, try again later)
    await agent.waitFor((l) => l.message === 'IPAM server listening', 'IPAM server listening');
    const probe = JSON.stringify({
      ...(JSON.parse(conf) as object),
      prevResult: { cniVersion: '1.1.0', ips: [{ address: '10.100.0.99/24' }] },
    });
    await eventually('a CHECK answered by the synced agent', async () => {
      const r = await run(env('CHECK', 'pa-probe'), probe);
      return r.json?.code === 103 && (await served('check', 'missing')) > 0 ? true : undefined;
    });
    // STATUS: answered by the agent
    assertSilentSuccess(await run(envNoAttachment('STATUS'), conf));
    assert.equal(await served('status', 'ready'), 1);
  });
  after(async () => {
    await agent?.kill();
    await s?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  test('ADD, CHECK, DEL: answered by the agent, written on the API server', async () => {
    const added = assertAdded(await run(env('ADD', 'pa1'), conf));
    const address = (added.ips as { address: string }[])[0]?.address;
    assert.deepEqual(s.fx.allocations().get(handle('pa1')), [address]);
    assert.equal(await served('add', 'allocated'), 1, 'the agent allocated it');
    const prev = JSON.stringify({ ...JSON.parse(conf), prevResult: added });
    assertSilentSuccess(await run(env('CHECK', 'pa1'), prev));
    assert.equal(await served('check', 'ok'), 1);
    assertSilentSuccess(await run(env('DEL', 'pa1'), conf));
    assert.equal(s.fx.allocations().has(handle('pa1')), false);
    assert.equal(await served('del', 'ok'), 1);
  });

  test('the agent SIGSTOPped: calls fall back; after SIGCONT it starts none of them', async () => {
    const gone = await served('add', 'client_gone');
    agent.child.kill('SIGSTOP');
    let address: string | undefined;
    try {
      const added = assertAdded(await run(env('ADD', 'pa-stop'), conf));
      address = (added.ips as { address: string }[])[0]?.address;
      assertSilentSuccess(await run(envNoAttachment('STATUS'), conf));
    } finally {
      agent.child.kill('SIGCONT');
    }
    await eventually('the agent saw the ADD whose client had gone', async () =>
      (await served('add', 'client_gone')) > gone ? true : undefined,
    );
    assert.deepEqual(s.fx.allocations().get(handle('pa-stop')), [address], "the direct path's address alone");
    assertSilentSuccess(await run(env('DEL', 'pa-stop'), conf));
    assert.equal(s.fx.allocations().has(handle('pa-stop')), false);
  });
});
