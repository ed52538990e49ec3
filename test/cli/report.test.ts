// Reading a check report back (cli/audit/report.ts): the schema (cli/audit/report-schema.ts,
// ajv) accepts what `check -o` writes and refuses, naming the first thing wrong, what release
// must not trust.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { readReport } from '../../cli/audit/report.ts';

const dir = mkdtempSync(join(tmpdir(), 'blockipam-report-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const leak = {
  address: '10.244.0.7',
  block: '10-244-0-0-26',
  ordinal: 7,
  handle: 'k8s-pod-network.abc.eth0',
  sequence: 1001,
  node: 'n1',
  reason: 'leaked-pod-deleted',
};
const good = {
  kind: 'IpamctlCheckReport',
  version: 1,
  takenAt: '2026-11-29T08:03:10.106Z',
  cluster: { server: 'https://127.0.0.1:6443', kubeSystemUID: 'uid-1' },
  resourceVersions: {},
  counts: {},
  byKind: {},
  problemCount: 1,
  problems: [],
  leaked: [leak],
};

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('readReport', () => {
  test('accepts a report as check -o writes it', async () => {
    assert.deepEqual((await readReport(file('good.json', good))).leaked, [leak]);
  });

  const bad: [string, unknown, RegExp][] = [
    ['null', 'null', /: not a JSON object$/],
    ['an array', '[]', /: not a JSON object$/],
    ['another kind', { kind: 'Something' }, /: kind is "Something", want IpamctlCheckReport$/],
    ['another version', { ...good, version: 2 }, /: version 2 is not supported \(want 1\)$/],
    ['no cluster', { ...good, cluster: undefined }, /: no cluster$/],
    [
      'an empty cluster UID',
      { ...good, cluster: { kubeSystemUID: '' } },
      /: cluster\.kubeSystemUID must NOT have fewer than 1 characters$/,
    ],
    ['no leaked list', { ...good, leaked: undefined }, /: no leaked$/],
    ['a null entry', { ...good, leaked: [null] }, /: leaked entry 1 is not an object$/],
    [
      'an entry without handle',
      { ...good, leaked: [leak, { ...leak, handle: undefined }] },
      /: leaked entry 2 .* lacks handle$/,
    ],
    [
      'a fractional ordinal',
      { ...good, leaked: [{ ...leak, ordinal: 7.5 }] },
      /: leaked entry 1: ordinal must be integer$/,
    ],
    [
      'an unknown reason',
      { ...good, leaked: [{ ...leak, reason: 'bored' }] },
      /: leaked entry 1: reason must be equal to one of the allowed values$/,
    ],
  ];
  for (const [what, content, message] of bad)
    test(`refuses ${what}, naming the file and the field`, async () => {
      const path = file(`${what.replaceAll(' ', '-')}.json`, content);
      await assert.rejects(readReport(path), (error: Error) => {
        assert.equal(error.name, 'CliError');
        assert.ok(error.message.startsWith(`${path} is not an ipamctl check report: `), error.message);
        assert.match(error.message, message);
        return true;
      });
    });

  test('a file that is not JSON names the file', async () => {
    await assert.rejects(readReport(file('garbage.json', '{')), /cannot read the report .*garbage\.json/);
  });
});
