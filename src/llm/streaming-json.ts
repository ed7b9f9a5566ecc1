import { Allow, parse as parsePartial } from "partial-json";

/** A plain JSON object, as tool-call arguments must be. */
export type JsonObject = Record<string, unknown>;

function asObject(value: unknown): JsonObject | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

const VALID_ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t", "u"]);
const CONTROL_ESCAPES: Record<string, string> = {
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

/**
 * Repairs two mistakes models make inside JSON strings: raw control characters (a literal newline in a
 * string value) and backslashes that start no valid escape (`"C:\dir"`). Returns the text unchanged when
 * there is nothing to repair. Never throws.
 */
export function repairJson(text: string): string {
  let out: string[] | undefined;
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (!inString) {
      if (ch === '"') inString = true;
      continue;
    }
    if (ch === "\\") {
      const next = text[i + 1];
      if (next !== undefined && VALID_ESCAPES.has(next)) {
        i++;
        continue;
      }
      if (next === undefined) continue;
      out ??= [];
      out.push(text.slice(last, i), "\\\\");
      last = i + 1;
    } else if (ch === '"') {
      inString = false;
    } else if (ch < " ") {
      out ??= [];
      out.push(
        text.slice(last, i),
        CONTROL_ESCAPES[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`,
      );
      last = i + 1;
    }
  }
  if (!out) return text;
  out.push(text.slice(last));
  return out.join("");
}

function tryParse(text: string): JsonObject | undefined {
  try {
    return asObject(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function tryParsePartial(text: string): JsonObject | undefined {
  try {
    return asObject(parsePartial(text, Allow.ALL));
  } catch {
    return undefined;
  }
}

/**
 * Parses tool-call arguments that may be incomplete (still streaming) or slightly malformed. Order:
 * `JSON.parse`; the same after {@link repairJson}; then the `partial-json` salvage parser on the repaired
 * text. Empty text and anything that is not an object yield `{}`. Never throws.
 *
 * A salvaged object can be silently truncated (a cut-off string value parses as a shorter string), which
 * is why the loop refuses to run tool calls of a `length`-truncated answer.
 */
export function parseStreamingJson(text: string): JsonObject {
  const trimmed = text.trim();
  if (trimmed === "") return {};
  // A buffer that does not end in `}` cannot be a complete object: skip the throwing native parse.
  const maybeComplete = trimmed.endsWith("}");
  if (maybeComplete) {
    const parsed = tryParse(trimmed);
    if (parsed) return parsed;
  }
  const repaired = repairJson(trimmed);
  if (maybeComplete && repaired !== trimmed) {
    const parsed = tryParse(repaired);
    if (parsed) return parsed;
  }
  // Text that needed repair is never valid as it was, so the salvage parser gets the repaired text.
  return tryParsePartial(repaired) ?? {};
}
