/**
 * Test tiers. A test file that needs anything beyond Node and the repo — the local control plane
 * (kube-apiserver + etcd), root and network namespaces, the CNI binaries — is named
 * `*.int.test.ts`; every other `*.test.ts` is a unit test. `npm run test:unit` runs the unit
 * tests only (in parallel, no control plane) with BLOCKIPAM_TEST_TIER=unit, and the helpers that
 * reach outside the process call {@link requireIntegrationTier}, so a misnamed test fails there
 * with this rule instead of quietly starting a control plane. `bash scripts/test.sh` runs both.
 *
 * No test skips itself. A skipped suite reports as passed, so a run missing a prerequisite would
 * go green without testing: a test that needs a binary checks for it with
 * {@link requirePrerequisite} and fails naming it, and scripts/run-tests.ts fails any run in which
 * a test or suite was skipped or marked todo (test/helpers/skip-reporter.ts lists them).
 */
import { accessSync, constants } from 'node:fs';

/** The environment variable scripts/run-tests.ts sets for the unit tier. */
export const TIER_ENV = 'BLOCKIPAM_TEST_TIER';

/**
 * @param what what the caller needs, e.g. "the control plane"
 * @throws Error under the unit tier: the test needs `what`, so its file must be `*.int.test.ts`
 */
export function requireIntegrationTier(what: string): void {
  if (process.env[TIER_ENV] !== 'unit') return;
  throw new Error(
    `this test needs ${what}, so it is not a unit test: name its file *.int.test.ts (test/helpers/tier.ts)`,
  );
}

/**
 * @param path the executable the test runs, e.g. /usr/lib/cni/ptp
 * @param what what it is, e.g. "Debian ptp 1.1.1"
 * @param howToGet how to install or build it, e.g. "scripts/setup.sh installs it (apt-get ...)"
 * @throws Error naming `what`, `path` and `howToGet` when `path` is not an executable file
 */
export function requirePrerequisite(path: string, what: string, howToGet: string): void {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`missing prerequisite: ${what} (no executable ${path}); ${howToGet}`);
  }
}
