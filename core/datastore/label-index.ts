/**
 * An inverted index of labels for the memory datastore: `key=value` and `key` → object names.
 * `candidates` narrows a LIST to the smallest posting set of the selector's equality and
 * existence terms; the caller still applies the full selector.
 */
import type { LabelSelector } from '../resources.ts';

export class LabelIndex {
  readonly #byPair = new Map<string, Set<string>>();
  readonly #byKey = new Map<string, Set<string>>();

  add(name: string, labels: Readonly<Record<string, string>> | undefined): void {
    for (const [key, value] of Object.entries(labels ?? {})) {
      posting(this.#byPair, `${key}=${value}`).add(name);
      posting(this.#byKey, key).add(name);
    }
  }

  remove(name: string, labels: Readonly<Record<string, string>> | undefined): void {
    for (const [key, value] of Object.entries(labels ?? {})) {
      this.#byPair.get(`${key}=${value}`)?.delete(name);
      this.#byKey.get(key)?.delete(name);
    }
  }

  /**
   * Names that may match `selector`, or undefined when the selector has no indexable term (the
   * caller then scans everything).
   */
  candidates(selector: LabelSelector | undefined): Iterable<string> | undefined {
    let best: Set<string> | undefined;
    const consider = (set: Set<string> | undefined): void => {
      const s = set ?? new Set<string>();
      if (!best || s.size < best.size) best = s;
    };
    for (const [key, value] of Object.entries(selector?.matchLabels ?? {}))
      consider(this.#byPair.get(`${key}=${value}`));
    for (const requirement of selector?.matchExpressions ?? []) {
      if (requirement.operator === 'Exists') consider(this.#byKey.get(requirement.key));
      if (requirement.operator === 'In' && requirement.values?.length === 1)
        consider(this.#byPair.get(`${requirement.key}=${requirement.values[0]}`));
    }
    return best ? [...best] : undefined;
  }
}

function posting(map: Map<string, Set<string>>, key: string): Set<string> {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  return set;
}
