/**
 * The cniVersion of an answer the agent decides before it parses the request (busy, too large,
 * not JSON): read cheaply, best effort, from the request's first bytes (docs/design-agent.md
 * §IPAM server). Pure.
 */
import { currentVersion, isSupportedVersion, type CniVersion } from 'blockipam/core/cni';

/**
 * 64 KiB: the request's text searched (bytes). A request is `{"v":2,"env":{…},"stdin":"…"}` with
 * a few hundred bytes of env before stdin, and a netconf names its `cniVersion` near its start:
 * the bound keeps a refused megabyte from being scanned whole.
 */
export const VERSION_SCAN_BYTES = 64 * 1024;

/**
 * `"cniVersion": "…"` as it appears inside the request's `stdin` string, JSON-encoded once more
 * (`\"cniVersion\":\"1.0.0\"`), with the netconf's whitespace around the colon raw or escaped.
 */
const ENCODED_KEY = /\\"cniVersion\\"(?:[ \t]|\\[nrt])*:(?:[ \t]|\\[nrt])*\\"([0-9.]{1,16})\\"/;

/**
 * The first `cniVersion` of a netconf in the request text `head` (only its first
 * {@link VERSION_SCAN_BYTES} bytes are looked at) when it is one core/cni supports, else 1.1.0
 * (currentVersion). Best effort: a netconf whose first `cniVersion` key is a nested one (in a
 * `prevResult` placed before the top-level key) answers in that one's version — still one the
 * runtime can read. Never throws.
 */
export function requestCniVersion(head: Buffer | undefined): CniVersion {
  if (head === undefined) return currentVersion;
  const found = ENCODED_KEY.exec(head.subarray(0, VERSION_SCAN_BYTES).toString('latin1'))?.[1];
  return isSupportedVersion(found) ? found : currentVersion;
}
