/** CNI_ARGS parsing: the Kubernetes keys in any order, malformed pairs and bad values are code 4. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCniArgs } from '../../../core/cni/args.ts';
import { isCniError } from 'blockipam/core/cni/errors';

void describe('CNI_ARGS', () => {
  void it('parses the five Kubernetes keys and IP in any order', () => {
    const a = parseCniArgs(
      'IP=10.1.0.50;K8S_POD_UID=u;IgnoreUnknown=1;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_NAMESPACE=ns',
    );
    assert.deepEqual(a, {
      podNamespace: 'ns',
      podName: 'p',
      podUID: 'u',
      infraContainerID: 'abc',
      ips: ['10.1.0.50'],
    });
  });
  const bad: [string, string][] = [
    ['A=1', 'unknown key without IgnoreUnknown'],
    ['IP=1=2', 'value containing ='],
    ['IP=10.0.0.1;', 'trailing ;'],
    ['=x', 'empty key'],
  ];
  for (const [raw, why] of bad)
    void it(`rejects ${raw} (${why}) with code 4`, () =>
      assert.throws(
        () => parseCniArgs(raw),
        (e) => isCniError(e) && e.code === 4,
      ));
  void it('IgnoreUnknown=true lets unknown keys through', () =>
    assert.deepEqual(parseCniArgs('IgnoreUnknown=true;MAC=aa').ips, []));

  void it('K8S_POD_* values are validated, code 4 naming the key', () => {
    const bad: [string, string][] = [
      ['K8S_POD_NAME', 'a'.repeat(100_000)],
      ['K8S_POD_NAME', 'Upper_Case'],
      ['K8S_POD_NAMESPACE', 'a'.repeat(64)],
      ['K8S_POD_NAMESPACE', 'a.b'],
      ['K8S_POD_INFRA_CONTAINER_ID', 'x'.repeat(1000)],
      ['K8S_POD_UID', 'bad uid'],
    ];
    for (const [k, v] of bad) {
      assert.throws(
        () => parseCniArgs(`IgnoreUnknown=1;${k}=${v}`),
        (e: { code?: number; details?: string; message?: string }) =>
          e.code === 4 && `${e.message} ${e.details}`.includes(k),
        k,
      );
    }
    const ok = parseCniArgs(
      'K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=coredns-5d78c9869d-abcde.x;K8S_POD_UID=0f1e2d3c-aaaa-bbbb-cccc-111122223333;K8S_POD_INFRA_CONTAINER_ID=abc123',
    );
    assert.equal(ok.podName, 'coredns-5d78c9869d-abcde.x');
  });
});
