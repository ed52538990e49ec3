/**
 * The nftables command (`nft`) could not be run, timed out, or refused a script or a listing.
 * The masquerade loop reports it, changes nothing more in that pass and tries again on the next.
 */
export class NftCommandError extends Error {
  override readonly name = 'NftCommandError';
  /** The argv that failed, e.g. ["nft", "-f", "-"]. */
  readonly argv: readonly string[];

  constructor(message: string, argv: readonly string[], options?: { cause?: unknown }) {
    super(message, options);
    this.argv = argv;
  }
}

/** True when `error` is a {@link NftCommandError} (also across bundles: compares the stable `name`). */
export function isNftCommandError(error: unknown): error is NftCommandError {
  return error instanceof Error && error.name === 'NftCommandError';
}
