#!/usr/bin/env node
/**
 * The ipamctl executable: `node cli/main.ts <command> …`. Wires the real process into the
 * testable dispatcher and sets the exit code (docs/design-cli.md §Exit codes).
 */
import { run } from './ipamctl.ts';

process.exitCode = await run({
  argv: process.argv.slice(2),
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
