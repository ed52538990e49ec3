/**
 * The nftables command (`nft`) could not be run, timed out, or refused a script or a listing.
 * The masquerade loop reports it, changes nothing more in that pass and tries again on the next.
 */
import { CommandError } from '../command.ts';

export class NftCommandError extends CommandError {
  override readonly name = 'NftCommandError';
}

/** True when `error` is a {@link NftCommandError} (also across bundles: compares the stable `name`). */
export function isNftCommandError(error: unknown): error is NftCommandError {
  return error instanceof Error && error.name === 'NftCommandError';
}
