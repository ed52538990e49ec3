/**
 * CNI spec versions this plugin speaks, and the per-command gates of the Go skel
 * (SPEC §2 "VERSION").
 */
import { CniCode, CniError } from './errors.ts';

/** Every version accepted, oldest first. Negotiation is exact string membership (§1.6). */
export const supportedVersions = ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof supportedVersions)[number];

/** The newest version; VERSION answers with it when the request names none we know. */
export const currentVersion: CniVersion = '1.1.0';

/** A config without `cniVersion` is read as 0.1.0 (libcni `DecodeVersion`). */
export const implicitVersion: CniVersion = '0.1.0';

export function isSupportedVersion(v: unknown): v is CniVersion {
  return typeof v === 'string' && (supportedVersions as readonly string[]).includes(v);
}

/** Orders two supported versions: negative when a is older than b. */
export function compareVersions(a: CniVersion, b: CniVersion): number {
  return supportedVersions.indexOf(a) - supportedVersions.indexOf(b);
}

/**
 * Checks that `version` is supported.
 * @throws CniError code 1, details listing the supported versions (conformance case 8)
 */
export function requireSupported(version: unknown): CniVersion {
  if (isSupportedVersion(version)) return version;
  throw new CniError(
    CniCode.incompatibleVersion,
    'incompatible CNI versions',
    `cniVersion: config is ${shown(version)}, plugin supports ${JSON.stringify(supportedVersions)}`,
  );
}

/**
 * A cniVersion that is not a string, by its type: JSON.stringify of a 100,000-deep array blew
 * the stack (an uncaught RangeError, code 999).
 */
function shown(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return `a JSON ${v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v}`;
}

/** Minimum config version per command (Go skel: CHECK ≥ 0.4.0; GC, STATUS ≥ 1.1.0). */
const minimumFor: Readonly<Record<string, CniVersion>> = { CHECK: '0.4.0', GC: '1.1.0', STATUS: '1.1.0' };

/**
 * @throws CniError code 1 "config version does not allow CHECK" when the command is newer
 *   than the config's version (conformance cases 31, 34)
 */
export function requireCommandAllowed(command: string, version: CniVersion): void {
  const min = minimumFor[command];
  if (min !== undefined && compareVersions(version, min) < 0) {
    throw new CniError(
      CniCode.incompatibleVersion,
      `config version does not allow ${command}`,
      `${command} needs cniVersion ${min} or later, config is ${version}`,
    );
  }
}
