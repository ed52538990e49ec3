/**
 * Test tiers. A test file that needs anything beyond Node and the repo — the local control plane
 * (kube-apiserver + etcd), root and network namespaces, the CNI binaries — is named
 * `*.int.test.ts`; every other `*.test.ts` is a unit test. `npm run test:unit` runs the unit
 * tests only (in parallel, no control plane) with BLOCKIPAM_TEST_TIER=unit, and the helpers that
 * reach outside the process call {@link requireIntegrationTier}, so a misnamed test fails there
 * with this rule instead of quietly starting a control plane. `bash scripts/test.sh` runs both.
 */

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
