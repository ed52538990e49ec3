/**
 * The daemons' real entry points (block-controller/agent/main.ts, block-controller/controller/main.ts,
 * run as processes) on a bad start: one line on stderr naming the problem and exit 2 — no stack
 * trace for a missing kubeconfig outside a cluster, no RangeError for a port above 65535, an
 * unknown flag named (not the help text) — and `--version` answering `<name> <version>` as every
 * role of the multi-call executable does (core/version.ts; the compiled roles:
 * test/cmd/multi-call.int.test.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

const DAEMONS = [
  {
    name: 'blockipam-agent',
    main: join(REPO, 'block-controller', 'agent', 'main.ts'),
    args: ['--node-name', 'n1'],
  },
  { name: 'blockipam-controller', main: join(REPO, 'block-controller', 'controller', 'main.ts'), args: [] },
] as const;

/** Runs the entry outside any cluster: no KUBERNETES_SERVICE_*, no KUBECONFIG, no ~/.kube. */
function run(
  main: string,
  args: readonly string[],
): { status: number | null; stdout: string; stderr: string } {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: '/nonexistent' };
  return spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', env, timeout: 60_000 });
}

/** Exit 2 and exactly one stderr line matching `message`. */
function assertOneLine(r: ReturnType<typeof run>, message: RegExp): void {
  assert.equal(r.status, 2, r.stderr);
  const lines = r.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `one line, got:\n${r.stderr}`);
  assert.match(lines[0] ?? '', message);
}

for (const d of DAEMONS) {
  describe(d.name, () => {
    test('without a kubeconfig outside a cluster: one line naming it, exit 2', () => {
      assertOneLine(
        run(d.main, d.args),
        new RegExp(`^${d.name}: not running in a cluster: KUBERNETES_SERVICE_HOST .* pass --kubeconfig FILE`),
      );
      assertOneLine(
        run(d.main, [...d.args, '--kubeconfig', '/nonexistent/kubeconfig']),
        new RegExp(`^${d.name}: cannot read kubeconfig /nonexistent/kubeconfig`),
      );
    });

    test('--metrics-port 99999: one line naming the value, exit 2', () => {
      assertOneLine(
        run(d.main, [...d.args, '--metrics-port', '99999']),
        new RegExp(`^${d.name}: --metrics-port must be a port 0-65535 .*not 99999$`),
      );
    });

    test('an unknown flag: one line naming it, exit 2 (no help text)', () => {
      const r = run(d.main, [...d.args, '--metrics-prot', '1']);
      assertOneLine(r, new RegExp(`^${d.name}: Unknown argument: metrics-prot$`));
      assert.equal(r.stdout, '');
    });

    test('--version prints "<name> <version>", exit 0', () => {
      const r = run(d.main, ['--version']);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, `${d.name} ${VERSION}\n`);
    });
  });
}

describe('blockipam-controller options', () => {
  const controller = DAEMONS.find((d) => d.name === 'blockipam-controller');
  assert.ok(controller);
  const c = controller;
  for (const [args, message] of [
    [['--identity', ''], /^blockipam-controller: --identity must not be empty/],
    [
      ['--debounce-ms', 'abc'],
      /^blockipam-controller: --debounce-ms must be a whole number of ms >= 0, not a number$/,
    ],
    [['--debounce-ms', '-5'], /^blockipam-controller: --debounce-ms must be a whole number/],
    [
      ['--api-server', 'not a url'],
      /^blockipam-controller: --api-server is not an https:\/\/ or http:\/\/ URL/,
    ],
    [
      ['--metrics-host', '999.1.1.1'],
      /^blockipam-controller: --metrics-host must be an IP address or a host name/,
    ],
    [
      ['--lease-duration-seconds', '5', '--renew-deadline-seconds', '10'],
      /^blockipam-controller: --renew-deadline-seconds must be less than --lease-duration-seconds$/,
    ],
    // every Event about a cluster-scoped object would be refused elsewhere with 422
    [['--events-namespace', 'kube-system'], /--events-namespace must be "default" \(got "kube-system"\)/],
    // the deleted-node quarantine is whole seconds, 0 (off) or more
    ...['-1', '1.5', 'soon'].map(
      (value) =>
        [
          ['--node-gone-grace-seconds', value],
          /--node-gone-grace-seconds must be a whole number of seconds >= 0/,
        ] as const,
    ),
  ] as const)
    test(`${args.join(' ')}: one line, exit 2`, () =>
      assertOneLine(run(c.main, [...c.args, ...args]), message));
});
