/**
 * DEL while the node agent is away (docs/design-plugin.md §DEL while the agent is away): the plugin
 * releases directly against the API server with its own credential (no on-disk queue for the agent
 * to replay), and while the agent is up a DEL goes to the agent. Real agent, real API server, the
 * executable; which path served each call is read from its `done` log line (the agent's log for a
 * call it served, the plugin's `logFile` for the direct path's).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  assertAdded,
  assertSilentSuccess,
  env,
  handle,
  startSuite,
  type Suite,
} from './helpers/conformance.ts';

void describe('DEL with and without the node agent', () => {
  let s: Suite;
  before(async () => (s = await startSuite('agent')));
  after(async () => await s?.teardown());
  const socket = (): string => join(s.tmp, 'agent', 'ipam.sock');
  /** The `path` of the `done` line of `cmd` for `containerID`: in the agent's log, or the plugin's. */
  const servedBy = (cmd: string, containerID: string): unknown => {
    const done = (l: Record<string, unknown>): boolean => l.cmd === cmd && l.containerID === containerID;
    const agent = s.agent?.lines.find((l) => l.message === 'done' && done(l));
    if (agent) return agent.path;
    const file = join(s.tmp, 'blockipam.log');
    if (!existsSync(file)) return undefined;
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'done' && done(l))?.path;
  };
  const held = (id: string): boolean => s.fx.allocations().has(handle(id));

  void it('while the agent is up, ADD and DEL go to the agent', async () => {
    assertAdded(await s.run(env('ADD', 'fb-up'), s.conf('1.1.0')));
    assert.equal(servedBy('ADD', 'fb-up'), 'agent');
    assert.equal(held('fb-up'), true);
    assertSilentSuccess(await s.run(env('DEL', 'fb-up'), s.conf('1.1.0')));
    assert.equal(servedBy('DEL', 'fb-up'), 'agent');
    assert.equal(held('fb-up'), false, 'released by the agent');
  });

  void it('agent stopped (its socket gone): DEL releases directly against the API server', async () => {
    assertAdded(await s.run(env('ADD', 'fb-away'), s.conf('1.1.0')));
    assert.equal(servedBy('ADD', 'fb-away'), 'agent');
    s.agent?.child.kill('SIGTERM'); // a clean stop removes the socket (ENOENT for the plugin)
    await s.agent?.exited();
    assert.equal(existsSync(socket()), false, 'no socket');
    assertSilentSuccess(await s.run(env('DEL', 'fb-away'), s.conf('1.1.0')));
    assert.equal(servedBy('DEL', 'fb-away'), 'direct');
    assert.equal(held('fb-away'), false, 'released with no agent');
    assertSilentSuccess(await s.run(env('DEL', 'fb-away'), s.conf('1.1.0')));
  });
});
