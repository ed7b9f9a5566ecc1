import { z } from "zod";
import { validateToolArguments } from "../agent/index.js";

/** The longest edited-arguments text accepted from a form (Slack's plain-text input holds 3000). */
export const EDITED_ARGUMENTS_MAX_CHARS = 20_000;

/**
 * The JSON Schema (as text) of a tool's zod parameters, stored in its approval record so the gateway — which
 * has no tools of its own — can validate an "Edit and approve" before deciding. `undefined` when the schema
 * cannot be expressed (the worker still validates the edit with the tool's own schema). Never throws.
 */
export function approvalSchemaOf(parameters: z.ZodType): string | undefined {
  try {
    const { $schema: _dropped, ...json } = z.toJSONSchema(parameters, {
      io: "input",
      unrepresentable: "any",
    });
    return JSON.stringify(json);
  } catch {
    return undefined;
  }
}

/** What an edit's check found: the validated (coerced) arguments, or the error text for the form. */
export type EditCheck =
  | { kind: "ok"; arguments: Record<string, unknown> }
  | { kind: "invalid"; text: string };

/**
 * Checks an "Edit and approve" form's text: a JSON object that passes the tool's schema (`schemaText` from
 * {@link approvalSchemaOf}; no schema = any object), with the same coercion and error text the loop gives the
 * model (`Validation failed for tool "<name>": …`). Pure apart from building the schema; never throws.
 */
export function checkEditedArguments(
  toolName: string,
  schemaText: string | undefined,
  text: string,
): EditCheck {
  if (text.length > EDITED_ARGUMENTS_MAX_CHARS) {
    return {
      kind: "invalid",
      text: `The arguments are too long (at most ${EDITED_ARGUMENTS_MAX_CHARS} characters).`,
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return { kind: "invalid", text: `Not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return { kind: "invalid", text: "The arguments must be a JSON object ({ … })." };
  }
  const args = parsed as Record<string, unknown>;
  let parameters: z.ZodType = z.record(z.string(), z.unknown());
  if (schemaText) {
    try {
      parameters = z.fromJSONSchema(JSON.parse(schemaText) as Parameters<typeof z.fromJSONSchema>[0]);
    } catch {
      // An unreadable stored schema: the worker validates with the tool's own schema.
    }
  }
  try {
    return {
      kind: "ok",
      arguments: validateToolArguments(
        { name: toolName, parameters },
        { type: "toolCall", id: "", name: toolName, arguments: args },
      ),
    };
  } catch (err) {
    return { kind: "invalid", text: err instanceof Error ? err.message : String(err) };
  }
}
