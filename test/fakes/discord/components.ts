/**
 * Discord's checks on a message's (legacy) components, as the REST API answers them: 400 with code 50035
 * "Invalid Form Body" and the offending paths. Limits: at most 5 action rows, each with 1 to 5 buttons; a
 * button's `label` at most 80 characters, its `custom_id` at most 100 and unique in the message (a
 * non-link button needs one), `style` 1–5
 * (https://discord.com/developers/docs/components/reference#action-row,
 * https://discord.com/developers/docs/components/reference#button).
 * Returns the `errors` object of the answer, or `undefined` when the components are valid.
 */
export function componentErrors(components: unknown): Record<string, unknown> | undefined {
  if (components === undefined || components === null) return undefined;
  const errors: Record<string, unknown> = {};
  const fail = (path: string, code: string, message: string) => {
    errors[path] = { _errors: [{ code, message }] };
  };
  if (!Array.isArray(components)) {
    fail("components", "BASE_TYPE_ARRAY", "Must be an array.");
    return errors;
  }
  if (components.length > 5) fail("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.");
  const customIds = new Set<string>();
  components.forEach((raw, row) => {
    const actionRow = raw as { type?: unknown; components?: unknown };
    const children = Array.isArray(actionRow.components)
      ? (actionRow.components as Record<string, unknown>[])
      : [];
    if (actionRow.type !== 1 || children.length === 0 || children.length > 5) {
      fail(`components.${row}`, "BASE_TYPE_BAD_LENGTH", "An action row holds 1 to 5 buttons.");
    }
    children.forEach((button, index) => {
      const at = `components.${row}.components.${index}`;
      if (button.type !== 2) return;
      const label = button.label;
      if (typeof label === "string" && [...label].length > 80) {
        fail(`${at}.label`, "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.");
      }
      if (typeof button.style !== "number" || button.style < 1 || button.style > 5) {
        fail(`${at}.style`, "BASE_TYPE_CHOICES", "Value must be one of (1, 2, 3, 4, 5).");
      }
      if (button.style === 5) return;
      const customId = button.custom_id;
      if (typeof customId !== "string" || customId === "") {
        fail(`${at}.custom_id`, "BASE_TYPE_REQUIRED", "This field is required");
      } else if ([...customId].length > 100) {
        fail(`${at}.custom_id`, "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.");
      } else if (customIds.has(customId)) {
        fail(`${at}.custom_id`, "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated");
      } else {
        customIds.add(customId);
      }
    });
  });
  return Object.keys(errors).length > 0 ? errors : undefined;
}
