/**
 * VERSION (SPEC §2 "VERSION"): `{cniVersion, supportedVersions}`, echoing the
 * request's cniVersion when stdin names a supported one, else the current version. stdin is
 * optional and may be anything (libcni sends `{"cniVersion":"1.1.0"}`).
 */
import { currentVersion, isSupportedVersion, supportedVersions } from '../versions.ts';

export function version(stdin: string): Record<string, unknown> {
  let requested: unknown;
  try {
    requested = (JSON.parse(stdin) as { cniVersion?: unknown } | null)?.cniVersion;
  } catch {
    requested = undefined;
  }
  return {
    cniVersion: isSupportedVersion(requested) ? requested : currentVersion,
    supportedVersions: [...supportedVersions],
  };
}
