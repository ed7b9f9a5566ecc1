/** Longest rendering of one value in a change line; longer ones are cut with `…`. */
const VALUE_CHARS = 60;
/** At most this many change lines; the rest are counted on a last line. */
const MAX_LINES = 8;

/**
 * The fields an "Edit and approve" changed, one compact line each: `field: before → after` (values as
 * JSON, cut to a few dozen characters), `field: (added) → after`, `field: before → (removed)`. Nested
 * objects compare by their JSON; keys in the order of `after`, then removed ones. Pure; never throws.
 */
export function argumentChanges(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const lines: string[] = [];
  const show = (value: unknown) => short(json(value));
  for (const [key, value] of Object.entries(after)) {
    if (!Object.hasOwn(before, key)) lines.push(`${key}: (added) → ${show(value)}`);
    else if (json(before[key]) !== json(value)) lines.push(`${key}: ${show(before[key])} → ${show(value)}`);
  }
  for (const key of Object.keys(before)) {
    if (!Object.hasOwn(after, key) && before[key] !== undefined)
      lines.push(`${key}: ${show(before[key])} → (removed)`);
  }
  if (lines.length <= MAX_LINES) return lines;
  return [...lines.slice(0, MAX_LINES - 1), `… and ${lines.length - MAX_LINES + 1} more changes`];
}

/** Pretty JSON of a call's arguments, as an edit form starts with. Never throws. */
export function argumentsJson(args: Record<string, unknown>): string {
  try {
    return JSON.stringify(args, null, 2) ?? "{}";
  } catch {
    return "{}";
  }
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "undefined";
  } catch {
    return String(value);
  }
}

function short(text: string): string {
  if (text.length <= VALUE_CHARS) return text;
  const code = text.charCodeAt(VALUE_CHARS - 2);
  return `${text.slice(0, code >= 0xd800 && code <= 0xdbff ? VALUE_CHARS - 2 : VALUE_CHARS - 1)}…`;
}
