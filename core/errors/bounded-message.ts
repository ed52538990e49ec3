/**
 * One rule for how long a refusal's text may travel (docs/design-plugin.md §Errors): the API
 * server's message, the node agent's answer on its socket and the CNI error's `details` are each
 * bounded by {@link boundMessage}, never cut at a fixed offset. The runtime copies a CNI error
 * into the pod's events on every retry, so the text must stay small; but the part an operator
 * needs — which field, node, pool or block, and which policy — must survive. Dependency-free.
 */

/** 4 KiB of text: a few lines of an event; an admission message is well under it. */
export const MAX_MESSAGE_CHARS = 4_096;

/**
 * A quoted value longer than this is an echoed input (a hostile annotation, a value the API
 * server quotes back), never a name: Kubernetes names are at most 253 characters.
 */
const LONG_QUOTE = 256;
/** Characters kept of a long quoted value: its start and its end. */
const QUOTE_HEAD = 64;
const QUOTE_TAIL = 16;
/** Of what is kept when the text must be cut in the middle: ¾ head (the label, the field, the node), ¼ tail. */
const HEAD_SHARE = 0.75;

/** A double-quoted string (JSON / Go %q escapes) of at least {@link LONG_QUOTE} characters. */
const LONG_QUOTED = new RegExp(`"((?:[^"\\\\]|\\\\.){${LONG_QUOTE},})"`, 'g');

/**
 * `text` made to fit `max` characters without losing what names the refusal:
 * 1. unchanged when it fits;
 * 2. else every double-quoted value longer than any Kubernetes name is shortened to its first 64
 *    and last 16 characters around `…[N characters cut]…` — the field names, node names, pool
 *    names and policy names around it are kept whole;
 * 3. if it still does not fit, the middle is cut (`… [N characters cut] …`), keeping the first
 *    three quarters (where the API server and the admission policies name the object, the node
 *    and the rule) and the last quarter (where a list ends and the verdict is).
 * Pure; never throws. The result is at most `max` characters (`max` ≥ 64).
 * @param max characters, default {@link MAX_MESSAGE_CHARS}
 */
export function boundMessage(text: string, max: number = MAX_MESSAGE_CHARS): string {
  if (text.length <= max) return text;
  const compact = text.replace(
    LONG_QUOTED,
    (_whole, inner: string) =>
      `"${inner.slice(0, QUOTE_HEAD)}…[${inner.length - QUOTE_HEAD - QUOTE_TAIL} characters cut]…${inner.slice(-QUOTE_TAIL)}"`,
  );
  if (compact.length <= max) return compact;
  // The marker's length depends on the number it carries: size it for the largest.
  const markerRoom = ` … [${compact.length} characters cut] … `.length;
  const keep = Math.max(0, max - markerRoom);
  const head = Math.floor(keep * HEAD_SHARE);
  const tail = keep - head;
  return `${compact.slice(0, head)} … [${compact.length - head - tail} characters cut] … ${tail > 0 ? compact.slice(-tail) : ''}`;
}
