/**
 * Makes a one-layer OCI image archive from a directory, without a registry or a container
 * daemon: the directory becomes an uncompressed layer tar (GNU tar, sorted, owner 0, mtime 0,
 * so the same tree gives the same digest), next to its config, manifest and index in an OCI
 * image layout (github.com/opencontainers/image-spec image-layout.md), tarred. containerd imports
 * it with `ctr -n k8s.io images import --platform linux/amd64 FILE` under the name given here
 * (index annotation `io.containerd.image.name`; `org.opencontainers.image.ref.name` holds the tag).
 *
 * CLI: node test/cluster/oci-image.ts --rootfs DIR --name REF --out FILE
 *        [--entrypoint JSON-ARRAY] [--cmd JSON-ARRAY] [--env K=V ...]
 * Used by test/cluster/build.sh (pause and busybox images) and by tests that bring their own
 * image (see test/helpers/cluster.ts importImage).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

/** What goes into the image besides the files. */
export interface ImageSpec {
  /** Directory whose contents become the image's root file system. */
  readonly rootfs: string;
  /** Full reference, e.g. `localhost/blockipam-test/busybox:1.35.0` (registry part required). */
  readonly name: string;
  /** Archive to write (replaced atomically). */
  readonly out: string;
  readonly entrypoint?: readonly string[];
  readonly cmd?: readonly string[];
  /** `K=V` entries; default `PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`. */
  readonly env?: readonly string[];
}

const defaultPath = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A blob of the layout: its descriptor fields. */
interface Blob {
  readonly digest: string;
  readonly size: number;
}

function putBlob(layout: string, data: Buffer): Blob {
  const hex = createHash('sha256').update(data).digest('hex');
  writeFileSync(join(layout, 'blobs', 'sha256', hex), data);
  return { digest: `sha256:${hex}`, size: data.length };
}

/** Deterministic tar of a tree (paths relative to it, `./` prefixed as image layers are). */
function tarTree(dir: string, out: string): void {
  execFileSync('tar', [
    '--create',
    '--file',
    out,
    '--directory',
    dir,
    '--sort=name',
    '--mtime=@0',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
    '.',
  ]);
}

/**
 * Writes the archive and returns the image's manifest digest.
 * @throws Error when `name` has no tag or registry part, or tar fails
 */
export function buildOciArchive(spec: ImageSpec): string {
  const slash = spec.name.indexOf('/');
  const tag = spec.name.slice(spec.name.lastIndexOf(':') + 1);
  if (slash < 0 || !spec.name.slice(slash).includes(':'))
    throw new Error(`image name ${spec.name}: needs registry/name:tag (e.g. localhost/x:1)`);
  const work = mkdtempSync(join(dirname(spec.out), '.oci-'));
  try {
    const layout = join(work, 'layout');
    mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
    const layerTar = join(work, 'layer.tar');
    tarTree(spec.rootfs, layerTar);
    const layer = putBlob(layout, readFileSync(layerTar));
    const config = putBlob(
      layout,
      Buffer.from(
        JSON.stringify({
          architecture: 'amd64',
          os: 'linux',
          config: {
            Env: spec.env ?? [defaultPath],
            ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
            ...(spec.cmd ? { Cmd: spec.cmd } : {}),
            WorkingDir: '/',
          },
          rootfs: { type: 'layers', diff_ids: [layer.digest] },
          history: [{ created_by: 'test/cluster/oci-image.ts' }],
        }),
      ),
    );
    const manifest = putBlob(
      layout,
      Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
          layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
        }),
      ),
    );
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.index.v1+json',
        manifests: [
          {
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            ...manifest,
            platform: { architecture: 'amd64', os: 'linux' },
            annotations: {
              'io.containerd.image.name': spec.name,
              'org.opencontainers.image.ref.name': tag,
            },
          },
        ],
      }),
    );
    const tmp = `${spec.out}.tmp`;
    tarTree(layout, tmp);
    renameSync(tmp, spec.out);
    return manifest.digest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      rootfs: { type: 'string' },
      name: { type: 'string' },
      out: { type: 'string' },
      entrypoint: { type: 'string' },
      cmd: { type: 'string' },
      env: { type: 'string', multiple: true },
    },
  });
  const need = (k: 'rootfs' | 'name' | 'out'): string => {
    const v = values[k];
    if (v === undefined) throw new Error(`oci-image: --${k} is required`);
    return v;
  };
  const list = (v: string | undefined): string[] | undefined =>
    v === undefined ? undefined : (JSON.parse(v) as string[]);
  const digest = buildOciArchive({
    rootfs: need('rootfs'),
    name: need('name'),
    out: need('out'),
    entrypoint: list(values.entrypoint),
    cmd: list(values.cmd),
    env: values.env,
  });
  console.log(digest);
}
