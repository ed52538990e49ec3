/**
 * Runs a command body with an open connection: failures become one line on stderr and exit 2,
 * and the connection is always closed.
 */
import { connect } from '../connect.ts';
import type { Connection, ConnectionFlags } from '../connect.ts';
import { reportFailure } from '../errors.ts';
import type { ExitCode, Io } from '../io.ts';

/** Connects, runs `body`, closes. */
export async function withConnection(
  flags: ConnectionFlags,
  io: Io,
  body: (conn: Connection) => Promise<ExitCode>,
): Promise<ExitCode> {
  let conn: Connection | undefined;
  try {
    conn = await connect(flags, io);
    return await body(conn);
  } catch (error) {
    return reportFailure(io.stderr, error);
  } finally {
    conn?.ds.close();
  }
}
