/**
 * A stub toolchain for the build scripts (test/tools/build-*.sh, test/{control-plane,cluster}/build.sh,
 * scripts/build-image.sh --prepare) and scripts/setup.sh: `go`, `apt-get`, `dpkg-deb` and `id`
 * (test/helpers/build-stubs/bin/) first on PATH, which do in milliseconds and without the network
 * what the scripts rely on them for, so both of a build script's branches — the first build into
 * an empty cache, then the cached one — run in seconds:
 *
 *   go build -o OUT, go install (GOBIN)   a stand-in executable (build-stubs/tool.sh) answering its
 *                                         tool's version query (`promtool --version`, `helm version
 *                                         --short`, `crane version`…) with the version stamped by
 *                                         `-ldflags -X …version=V`, else the module's @V
 *   go mod init|edit -replace|download -json, go get   a go.mod and its replace lines; an upstream
 *                                         go.mod (build-stubs/upstream.mod) with k8s.io staging
 *                                         replaces and k8s.io/client-go
 *   apt-get download|update|install|indextargets   PKG_1.0-stub_amd64.deb files; nothing;
 *                                         nothing; no lists (a bare machine before its first
 *                                         `apt-get update`)
 *   dpkg-deb -x DEB DIR                   the package's executables (runc, busybox, mmdebstrap…)
 *   id -u                                 0 (build-image.sh's root check; nothing here needs root)
 *
 * Every `go`, `apt-get` and `dpkg-deb` call is appended to the log, one line each. With
 * STUB_FAIL=1 in the environment `go` and `apt-get` fail, saying so on stderr.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const stubs = join(dirname(fileURLToPath(import.meta.url)), 'build-stubs');

/**
 * @param log a file of the caller's the stubs append their calls to
 * @param path the PATH the stubs go in front of (default this process's)
 * @returns environment entries to add to a build script's: PATH and STUB_LOG
 */
export function stubToolchainEnv(log: string, path = process.env.PATH ?? ''): Record<string, string> {
  return { PATH: [join(stubs, 'bin'), path].join(delimiter), STUB_LOG: log };
}

/**
 * @param log the file given to {@link stubToolchainEnv}
 * @returns the calls that build or fetch something (`go build`, `go install`, `apt-get download`)
 */
export function buildCalls(log: string): string[] {
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => /^(go (build|install)|apt-get download) /.test(l));
}

/** How a script run ended. */
export interface ScriptRun {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `bash script ...args` and resolves once it has exited and its stdout and stderr are closed
 * (an orphaned child still holding one keeps the run pending).
 * @param env the whole environment of the run
 */
export function runScript(
  script: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}
