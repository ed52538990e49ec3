/**
 * Writes the CNI calls of one pod's life on the test cluster — every plugin the runtime ran for
 * its sandbox, in order, as recorded by cni-recorder.sh — to the file named by
 * BLOCKIPAM_CNI_LIFE_OUT (nothing when it is unset). docs/test-cluster.md quotes such a record.
 * The CNI_* variables and CNI_ARGS are kept; every other variable is listed by name only
 * (containerd passes its whole environment through), secrets are redacted by cniCalls().
 */
import { writeFileSync } from 'node:fs';
import { cniCalls } from './blockipam.ts';

export function writeLifeOfPod(node: string, sandbox: string): void {
  const out = process.env.BLOCKIPAM_CNI_LIFE_OUT;
  if (out === undefined || out === '') return;
  const calls = cniCalls(node).filter((c) => c.env.CNI_CONTAINERID === sandbox);
  const t0 = calls[0]?.at ?? 0n;
  const life = calls.map((c) => ({
    atMs: Number((c.at - t0) / 1_000_000n),
    plugin: c.plugin,
    rc: c.rc,
    cni: Object.fromEntries(Object.entries(c.env).filter(([k]) => k.startsWith('CNI_'))),
    otherVariables: Object.keys(c.env)
      .filter((k) => !k.startsWith('CNI_'))
      .sort(),
    stdin: c.stdin,
    stdout: c.stdout.trim() === '' ? undefined : (JSON.parse(c.stdout) as unknown),
  }));
  writeFileSync(out, JSON.stringify({ node, sandbox, calls: life }, null, 2) + '\n');
}
