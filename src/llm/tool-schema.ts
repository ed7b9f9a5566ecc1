import { z } from "zod";

/** A JSON Schema object as sent in a function tool's `parameters`. */
export type JsonSchema = Record<string, unknown>;

const schemaCache = new WeakMap<z.ZodType, JsonSchema>();

/**
 * The JSON Schema of a tool's zod parameters, as the model should fill them in (`io: "input"`, so
 * fields with defaults are optional). Types JSON Schema cannot express become `{}` instead of throwing;
 * the `$schema` key is dropped (some OpenAI-compatible servers reject it). Cached per schema object, so
 * converting the same tools every turn costs nothing. Treat the result as read-only.
 */
export function toolParametersSchema(schema: z.ZodType): JsonSchema {
  const cached = schemaCache.get(schema);
  if (cached) return cached;
  const { $schema: _dropped, ...json } = z.toJSONSchema(schema, {
    io: "input",
    unrepresentable: "any",
  }) as JsonSchema;
  if (json.type === undefined && json.properties === undefined) {
    // Function parameters must be an object schema; wrap anything else in an empty one.
    Object.assign(json, { type: "object", properties: {} });
  }
  schemaCache.set(schema, json);
  return json;
}
