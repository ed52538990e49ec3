/**
 * The version every role prints for `--version` (the package version: also the image tag and the
 * chart's appVersion), in one form for all of them: `<role name> <version>` on stdout, exit 0 —
 * `blockipam 0.1.0`, `ipamctl 0.1.0`, `blockipam-agent 0.1.0`, `blockipam-controller 0.1.0`.
 * The multi-call entry answers it for every role (cmd/blockipam.ts); the agent's and the
 * controller's own entries answer the same when run alone. Not in core's barrel: imported only
 * when asked for (`blockipam/core/version`), so the plugin's start-up does not evaluate it.
 */
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;

/** The `--version` answer of the role invoked as `name`, with its newline. */
export function versionLine(name: string): string {
  return `${name} ${VERSION}\n`;
}
