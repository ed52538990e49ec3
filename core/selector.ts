/**
 * Kubernetes label selectors: matching (for pool nodeSelector / namespaceSelector and the memory
 * datastore) and rendering to the `labelSelector` query syntax the API server takes.
 * Semantics as in k8s.io/apimachinery metav1.LabelSelectorAsSelector: matchLabels AND every
 * matchExpression; an absent or empty selector matches everything.
 */
import type { LabelSelector, LabelSelectorRequirement } from './resources.ts';

/** True when `labels` satisfy `selector` (absent selector = everything). */
export function matchesSelector(
  selector: LabelSelector | undefined,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  if (!selector) return true;
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (have[key] !== value) return false;
  }
  return (selector.matchExpressions ?? []).every((requirement) => matchesRequirement(requirement, have));
}

function matchesRequirement(
  requirement: LabelSelectorRequirement,
  labels: Readonly<Record<string, string>>,
): boolean {
  const value = labels[requirement.key];
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
  }
}

/**
 * Renders a selector as the API server's `labelSelector` string, e.g.
 * `{matchLabels: {a: 'b'}, matchExpressions: [{key: 'c', operator: 'Exists'}]}` → "a=b,c".
 * Returns "" for an empty selector.
 */
export function selectorToQuery(selector: LabelSelector | undefined): string {
  if (!selector) return '';
  const parts = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    if (operator === 'Exists') parts.push(key);
    else if (operator === 'DoesNotExist') parts.push(`!${key}`);
    else parts.push(`${key} ${operator === 'In' ? 'in' : 'notin'} (${values.join(',')})`);
  }
  return parts.join(',');
}
