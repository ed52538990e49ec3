/**
 * One rule for a call that names another node than the one it reached (docs/design-core.md §Node
 * IPAM service): the netconf's `ipam.nodeName` is wrong. The direct path meets it as a pod
 * scheduled on another node (pod-context.ts) or as a credential bound to another Node
 * ({@link credentialNodeProblem}, before any write), the node agent as a call naming another node
 * than the one it serves; all refuse with this message, which the plugin reports as CNI 7 ("node
 * name mismatch": the ADD outcome `misconfigured`, the agent's error kind `misconfigured`, or the
 * direct path's own check).
 */

/**
 * The message refusing a call for `callNode` when the truth is `actualNode`.
 * @param subject who says so, ending before "node": e.g. `pod ns/p runs on`
 */
export function nodeMismatchMessage(subject: string, actualNode: string, callNode: string): string {
  return `${subject} node "${actualNode}", but this plugin's node name is "${callNode}" (ipam.nodeName, default the host name in lower case): set ipam.nodeName to the name of this host's Node object`;
}

/**
 * The node agent's check, before serving any operation: a call naming another node than
 * `servedNode` is refused, never served with the agent's credentials for another node.
 * @returns the refusal's message, or undefined when `callNode` is `servedNode`
 */
export function servedNodeProblem(callNode: string, servedNode: string): string | undefined {
  return callNode === servedNode
    ? undefined
    : nodeMismatchMessage('the node agent on this host serves', servedNode, callNode);
}

/**
 * The plugin's direct path's check, before any write: a call naming another node than the Node
 * its credential belongs to (core/kube's credentialNodeName: the token's node claim) is refused,
 * instead of reaching the API server as writes the admission policy then denies in its own terms.
 * @returns the refusal's message, or undefined when the names agree or the credential names no Node
 */
export function credentialNodeProblem(
  callNode: string,
  credentialNode: string | undefined,
): string | undefined {
  return credentialNode === undefined || callNode === credentialNode
    ? undefined
    : nodeMismatchMessage(
        "this plugin's credential (ipam.kubeconfig's token) belongs to",
        credentialNode,
        callNode,
      );
}
