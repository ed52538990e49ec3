/**
 * One rule for a call that names another node than the one it reached (docs/design-core.md §Node
 * IPAM service): the netconf's `ipam.nodeName` is wrong. The direct path meets it as a pod
 * scheduled on another node (pod-context.ts), the node agent as a call naming another node than
 * the one it serves; both refuse with this message, which the plugin reports as CNI 7 ("node
 * name mismatch": the ADD outcome `misconfigured`, or the agent's error kind `misconfigured`).
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
