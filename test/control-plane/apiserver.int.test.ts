/**
 * Smoke tests: prove the test control plane is a real kube-apiserver + etcd, with the
 * semantics blockipam relies on (structural-schema validation, compare-and-swap on
 * resourceVersion, delete preconditions, RBAC). Uses @kubernetes/client-node as a user would.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  KubeConfig,
  RbacAuthorizationV1Api,
  VersionApi,
} from '@kubernetes/client-node';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { controlPlane } from '../helpers/control-plane.ts';

const group = 'smoke.blockipam.io';
const version = 'v1';
const plural = 'widgets';
const crdName = `${plural}.${group}`;

const crd: V1CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: crdName },
  spec: {
    group,
    scope: 'Cluster',
    names: { plural, singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: version,
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['size'],
                properties: { size: { type: 'integer', minimum: 1, maximum: 10 } },
              },
            },
          },
        },
      },
    ],
  },
};

interface Widget {
  apiVersion: string;
  kind: string;
  metadata: { name: string; resourceVersion?: string; uid?: string };
  spec: { size: number };
}

function widget(name: string, size: number): Widget {
  return { apiVersion: `${group}/${version}`, kind: 'Widget', metadata: { name }, spec: { size } };
}

/** Runs `fn` and returns the HTTP status of the ApiException it throws (or 200 if none). */
async function statusOf(fn: () => Promise<unknown>): Promise<{ code: number; body: string }> {
  try {
    await fn();
    return { code: 200, body: '' };
  } catch (err) {
    if (err instanceof ApiException) return { code: err.code, body: String(err.body) };
    throw err;
  }
}

function kubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

describe('real kube-apiserver', () => {
  const cp = controlPlane();
  const admin = kubeConfig(cp.adminKubeconfig);
  const dev = kubeConfig(cp.devKubeconfig);
  const adminObjects = admin.makeApiClient(CustomObjectsApi);
  const devObjects = dev.makeApiClient(CustomObjectsApi);
  const crds = admin.makeApiClient(ApiextensionsV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);

  before(async () => {
    await crds.createCustomResourceDefinition({ body: crd });
    // Wait until the CRD is Established and its resource answers.
    for (let i = 0; i < 100; i++) {
      const got = await crds.readCustomResourceDefinition({ name: crdName });
      const established = got.status?.conditions?.some(
        (c) => c.type === 'Established' && c.status === 'True',
      );
      if (established) {
        const listed = await statusOf(() => adminObjects.listClusterCustomObject({ group, version, plural }));
        if (listed.code === 200) return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`CRD ${crdName} was not established in 10 s`);
  });

  after(async () => {
    await statusOf(() => rbac.deleteClusterRoleBinding({ name: 'smoke-widgets-dev' }));
    await statusOf(() => rbac.deleteClusterRole({ name: 'smoke-widgets' }));
    await statusOf(() => crds.deleteCustomResourceDefinition({ name: crdName }));
  });

  test('reports kube-apiserver v1.37.x', async () => {
    const info = await admin.makeApiClient(VersionApi).getCode();
    console.log(`server version: ${info.gitVersion} (platform ${info.platform}, go ${info.goVersion})`);
    assert.match(info.gitVersion, /^v1\.37\.\d+$/);
    assert.equal(info.gitVersion, cp.serverVersion);
  });

  test('serves a CRD with a structural schema', async () => {
    const created = (await adminObjects.createClusterCustomObject({
      group,
      version,
      plural,
      body: widget('served', 3),
    })) as Widget;
    assert.equal(created.spec.size, 3);
    assert.ok(created.metadata.uid);
    const got = (await adminObjects.getClusterCustomObject({
      group,
      version,
      plural,
      name: 'served',
    })) as Widget;
    assert.equal(got.metadata.resourceVersion, created.metadata.resourceVersion);
  });

  test('rejects an object violating the schema with 422 naming the field', async () => {
    const r = await statusOf(() =>
      adminObjects.createClusterCustomObject({ group, version, plural, body: widget('too-big', 11) }),
    );
    assert.equal(r.code, 422);
    assert.match(r.body, /spec\.size/);
    const missing = await statusOf(() =>
      adminObjects.createClusterCustomObject({
        group,
        version,
        plural,
        body: { ...widget('no-size', 1), spec: {} },
      }),
    );
    assert.equal(missing.code, 422);
    assert.match(missing.body, /spec\.size/);
  });

  test('two updates from the same resourceVersion: exactly one succeeds, the other gets 409', async () => {
    const base = (await adminObjects.createClusterCustomObject({
      group,
      version,
      plural,
      body: widget('cas', 1),
    })) as Widget;
    const update = (size: number) =>
      statusOf(() =>
        adminObjects.replaceClusterCustomObject({
          group,
          version,
          plural,
          name: 'cas',
          body: { ...base, spec: { size } },
        }),
      );
    const results = await Promise.all([update(2), update(3)]);
    const codes = results.map((r) => r.code).sort();
    assert.deepEqual(codes, [200, 409]);
    const final = (await adminObjects.getClusterCustomObject({
      group,
      version,
      plural,
      name: 'cas',
    })) as Widget;
    assert.ok([2, 3].includes(final.spec.size));
    assert.notEqual(final.metadata.resourceVersion, base.metadata.resourceVersion);
  });

  test('DELETE with a stale resourceVersion precondition is refused', async () => {
    const base = (await adminObjects.createClusterCustomObject({
      group,
      version,
      plural,
      body: widget('precondition', 1),
    })) as Widget;
    await adminObjects.replaceClusterCustomObject({
      group,
      version,
      plural,
      name: 'precondition',
      body: { ...base, spec: { size: 2 } },
    });
    const stale = await statusOf(() =>
      adminObjects.deleteClusterCustomObject({
        group,
        version,
        plural,
        name: 'precondition',
        body: { preconditions: { resourceVersion: base.metadata.resourceVersion } },
      }),
    );
    assert.equal(stale.code, 409);
    const still = (await adminObjects.getClusterCustomObject({
      group,
      version,
      plural,
      name: 'precondition',
    })) as Widget;
    assert.equal(still.spec.size, 2);
    const fresh = await statusOf(() =>
      adminObjects.deleteClusterCustomObject({
        group,
        version,
        plural,
        name: 'precondition',
        body: { preconditions: { resourceVersion: still.metadata.resourceVersion, uid: still.metadata.uid } },
      }),
    );
    assert.equal(fresh.code, 200);
  });

  test('the unprivileged identity gets 403 until a ClusterRole and binding grant it', async () => {
    const denied = await statusOf(() => devObjects.listClusterCustomObject({ group, version, plural }));
    assert.equal(denied.code, 403);
    await rbac.createClusterRole({
      body: {
        metadata: { name: 'smoke-widgets' },
        rules: [{ apiGroups: [group], resources: [plural], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'smoke-widgets-dev' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'smoke-widgets' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'blockipam-dev' }],
      },
    });
    // RBAC changes reach the authorizer through an informer: poll briefly.
    let code = 0;
    for (let i = 0; i < 50 && code !== 200; i++) {
      code = (await statusOf(() => devObjects.listClusterCustomObject({ group, version, plural }))).code;
      if (code !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(code, 200);
    // The grant is read-only: a write is still forbidden.
    const write = await statusOf(() =>
      devObjects.createClusterCustomObject({ group, version, plural, body: widget('by-dev', 1) }),
    );
    assert.equal(write.code, 403);
  });
});
