/** cmd/role.ts: which role the multi-call executable plays for an invoked name and its arguments. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resolveRole } from '../../cmd/role.ts';

describe('multi-call role resolution', () => {
  test('the invoked name picks the role, as a path or a bare name', () => {
    assert.deepEqual(resolveRole('/opt/cni/bin/blockipam', []), { role: 'plugin', args: [] });
    assert.deepEqual(resolveRole('ipamctl', ['check', '-o', 'r.json']), {
      role: 'ipamctl',
      args: ['check', '-o', 'r.json'],
    });
    assert.deepEqual(resolveRole('./blockipam-agent', ['install']), { role: 'agent', args: ['install'] });
    assert.deepEqual(resolveRole('/usr/local/bin/blockipam-controller', ['--help']), {
      role: 'controller',
      args: ['--help'],
    });
  });

  test('under the plugin name, a subcommand picks the role and is removed from its arguments', () => {
    assert.deepEqual(resolveRole('blockipam', ['agent', '--routes']), { role: 'agent', args: ['--routes'] });
    assert.deepEqual(resolveRole('blockipam', ['controller']), { role: 'controller', args: [] });
    assert.deepEqual(resolveRole('blockipam', ['ipamctl', 'show']), { role: 'ipamctl', args: ['show'] });
    assert.deepEqual(resolveRole('blockipam', ['plugin']), { role: 'plugin', args: [] });
  });

  test('a subcommand is not looked for under another role’s name (ipamctl agent is ipamctl’s business)', () => {
    assert.deepEqual(resolveRole('ipamctl', ['agent']), { role: 'ipamctl', args: ['agent'] });
  });

  test('--help under the plugin name is the multi-call usage', () => {
    assert.deepEqual(resolveRole('blockipam', ['--help']), { help: true });
    assert.deepEqual(resolveRole('blockipam', ['-h']), { help: true });
  });

  test('an unknown name or subcommand is an error naming it and the valid ones', () => {
    const name = resolveRole('/tmp/x/blockipam-cni', []);
    assert.ok('error' in name);
    assert.match(name.error, /unknown role "blockipam-cni"/);
    assert.match(name.error, /blockipam, ipamctl, blockipam-agent, blockipam-controller/);
    const sub = resolveRole('blockipam', ['agnet']);
    assert.ok('error' in sub);
    assert.match(sub.error, /unknown subcommand "agnet": one of plugin, ipamctl, agent, controller/);
    // Object prototype names are not roles.
    assert.ok('error' in resolveRole('constructor', []));
    assert.ok('error' in resolveRole('blockipam', ['toString']));
  });

  test('--version alone is answered for every role, by name and by subcommand, with the role’s name', () => {
    assert.deepEqual(resolveRole('blockipam', ['--version']), { version: 'blockipam' });
    assert.deepEqual(resolveRole('/usr/local/bin/ipamctl', ['--version']), { version: 'ipamctl' });
    assert.deepEqual(resolveRole('blockipam-agent', ['--version']), { version: 'blockipam-agent' });
    assert.deepEqual(resolveRole('blockipam', ['controller', '--version']), {
      version: 'blockipam-controller',
    });
    assert.deepEqual(resolveRole('blockipam', ['plugin', '--version']), { version: 'blockipam' });
    // not alone: the role's own parser decides (ipamctl check --version is ipamctl's usage error)
    assert.deepEqual(resolveRole('ipamctl', ['check', '--version']), {
      role: 'ipamctl',
      args: ['check', '--version'],
    });
  });
});
