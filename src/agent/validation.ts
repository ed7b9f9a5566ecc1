import { z } from "zod";
import type { AnyAgentTool, ToolCall } from "./types.js";

/**
 * Validates a tool call's arguments against the tool's zod schema. Primitives are coerced toward the
 * schema first, the way pi does: `"5"` → 5 for a number, `"true"` → true for a boolean, numbers and
 * booleans → strings for a string, `null` → 0 / false / "". Unknown object keys are dropped.
 *
 * @param rawArguments the model's arguments as they arrived (shown in the error text)
 * @throws Error with the text `Validation failed for tool "<name>": …` when the arguments do not fit.
 */
export function validateToolArguments(
  tool: Pick<AnyAgentTool, "name" | "parameters">,
  toolCall: ToolCall,
  rawArguments: Record<string, unknown> = toolCall.arguments,
): Record<string, unknown> {
  const coerced = coerceToSchema(tool.parameters, copyJson(toolCall.arguments));
  const parsed = tool.parameters.safeParse(coerced);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  throw new Error(formatValidationError(tool.name, parsed.error, rawArguments));
}

/** The exact error text of a failed validation (docs/agent-loop.md, deviation 4). */
export function formatValidationError(toolName: string, error: z.ZodError, received: unknown): string {
  const lines = error.issues.map((issue) => {
    const path = issue.path.length === 0 ? "root" : issue.path.map(String).join(".");
    return `  - ${path}: ${issue.message}`;
  });
  return `Validation failed for tool "${toolName}":\n${lines.join("\n")}\n\nReceived arguments:\n${JSON.stringify(received, null, 2)}`;
}

/** Deep copy of parsed JSON (what tool arguments are); much cheaper than `structuredClone`. */
function copyJson(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(copyJson);
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (Object.hasOwn(value, key)) out[key] = copyJson((value as Record<string, unknown>)[key]);
  }
  return out;
}

const NUMERIC = /^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

/** Walks the schema and converts primitive values toward it. Returns the (possibly new) value. */
function coerceToSchema(schema: z.ZodType, value: unknown): unknown {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    if (value === undefined || (value === null && schema instanceof z.ZodNullable)) return value;
    return coerceToSchema(schema.unwrap() as z.ZodType, value);
  }
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodCatch || schema instanceof z.ZodReadonly) {
    if (value === undefined) return value;
    return coerceToSchema(schema.def.innerType as z.ZodType, value);
  }
  if (schema instanceof z.ZodPipe) return coerceToSchema(schema.def.in as z.ZodType, value);
  if (schema instanceof z.ZodObject) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
    const record = value as Record<string, unknown>;
    for (const [key, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
      if (key in record) record[key] = coerceToSchema(field, record[key]);
    }
    return record;
  }
  if (schema instanceof z.ZodArray) {
    if (!Array.isArray(value)) return value;
    for (let i = 0; i < value.length; i++) value[i] = coerceToSchema(schema.element as z.ZodType, value[i]);
    return value;
  }
  if (schema instanceof z.ZodNumber) {
    if (value === null) return 0;
    if (typeof value === "string" && NUMERIC.test(value)) return Number(value);
    if (typeof value === "boolean") return value ? 1 : 0;
    return value;
  }
  if (schema instanceof z.ZodBoolean) {
    if (value === null) return false;
    if (value === "true") return true;
    if (value === "false") return false;
    return value;
  }
  if (schema instanceof z.ZodString) {
    if (value === null) return "";
    if (typeof value === "number" || typeof value === "boolean") return String(value);
    return value;
  }
  return value;
}
