/**
 * The part of Slack's Block Kit validation the bot's messages can hit: Slack refuses a message whose
 * blocks break a limit with `invalid_blocks` (and an `errors` list) instead of cutting anything
 * (https://docs.slack.dev/reference/methods/chat.postMessage, error `invalid_blocks`;
 * https://docs.slack.dev/reference/methods/blocks.validate). Limits:
 * - a block's `block_id` ≤ 255 characters and unique in the message
 *   (https://docs.slack.dev/reference/block-kit/blocks);
 * - a section's text ≤ 3000 (https://docs.slack.dev/reference/block-kit/blocks/section-block);
 * - an actions block ≤ 25 elements (https://docs.slack.dev/reference/block-kit/blocks/actions-block);
 * - a button's `text` is plain_text ≤ 75, `action_id` ≤ 255 and unique in the message, `value` ≤ 2000,
 *   `style` only `primary` or `danger` (https://docs.slack.dev/reference/block-kit/block-elements/button-element);
 * - a confirmation dialog's `title` ≤ 100, `text` ≤ 300, `confirm` and `deny` ≤ 30, all present
 *   (https://docs.slack.dev/reference/block-kit/composition-objects/confirmation-dialog-object);
 * - a `context_actions` block holds 1 to 5 `feedback_buttons` / `icon_button` elements
 *   (https://docs.slack.dev/reference/block-kit/blocks/context-actions-block); `feedback_buttons` has an
 *   `action_id` and a `positive_button` and `negative_button`, each a plain_text `text` and a `value`
 *   (https://docs.slack.dev/tools/node-slack-sdk/reference/web-api/interfaces/FeedbackButtons; the
 *   fake applies the button element's text and value limits to them);
 * - a `markdown` block's text ≤ 12,000 (https://docs.slack.dev/reference/block-kit/blocks/markdown-block);
 * - a `context` block holds 1 to 10 elements, each an image or a `mrkdwn` / `plain_text` text object
 *   (https://docs.slack.dev/reference/block-kit/blocks/context-block) whose text is 1 to 3000 characters
 *   (https://docs.slack.dev/reference/block-kit/composition-objects/text-object).
 * Lengths are counted in characters (code points).
 */
export function blockErrors(blocks: unknown[]): string[] {
  const errors: string[] = [];
  const blockIds = new Set<string>();
  const actionIds = new Set<string>();
  const unique = (seen: Set<string>, id: unknown, where: string) => {
    if (typeof id !== "string") return;
    if (seen.has(id)) errors.push(`${where}: duplicate id ${id}`);
    seen.add(id);
  };
  blocks.forEach((raw, index) => {
    const block = raw as Record<string, unknown>;
    const where = `/${index}`;
    tooLong(errors, `${where}/block_id`, block.block_id, 255);
    unique(blockIds, block.block_id, `${where}/block_id`);
    if (block.type === "section") tooLong(errors, `${where}/text`, textOf(block.text), 3000);
    if (block.type === "markdown") {
      if (typeof block.text !== "string") errors.push(`${where}/text: required`);
      tooLong(errors, `${where}/text`, block.text, 12_000);
    }
    if (block.type === "context_actions") contextActionsErrors(errors, where, block, actionIds, unique);
    if (block.type === "context") contextErrors(errors, where, block);
    if (block.type !== "actions") return;
    const elements = Array.isArray(block.elements) ? (block.elements as Record<string, unknown>[]) : [];
    if (elements.length === 0 || elements.length > 25) errors.push(`${where}/elements: 1 to 25 elements`);
    elements.forEach((element, position) => {
      if (element.type !== "button") return;
      const at = `${where}/elements/${position}`;
      plainText(errors, `${at}/text`, element.text, 75);
      tooLong(errors, `${at}/action_id`, element.action_id, 255);
      unique(actionIds, element.action_id, `${at}/action_id`);
      tooLong(errors, `${at}/value`, element.value, 2000);
      if (element.style !== undefined && element.style !== "primary" && element.style !== "danger") {
        errors.push(`${at}/style: must be primary or danger`);
      }
      if (element.confirm !== undefined) confirmErrors(errors, `${at}/confirm`, element.confirm);
    });
  });
  return errors;
}

function contextErrors(errors: string[], where: string, block: Record<string, unknown>): void {
  const elements = Array.isArray(block.elements) ? (block.elements as Record<string, unknown>[]) : [];
  if (elements.length === 0 || elements.length > 10) errors.push(`${where}/elements: 1 to 10 elements`);
  elements.forEach((element, position) => {
    const at = `${where}/elements/${position}`;
    if (element.type === "image") return;
    if (element.type !== "mrkdwn" && element.type !== "plain_text") {
      errors.push(`${at}/type: must be image, mrkdwn or plain_text`);
      return;
    }
    if (typeof element.text !== "string" || element.text === "") errors.push(`${at}/text: required`);
    tooLong(errors, `${at}/text`, element.text, 3000);
  });
}

function contextActionsErrors(
  errors: string[],
  where: string,
  block: Record<string, unknown>,
  actionIds: Set<string>,
  unique: (seen: Set<string>, id: unknown, where: string) => void,
): void {
  const elements = Array.isArray(block.elements) ? (block.elements as Record<string, unknown>[]) : [];
  if (elements.length === 0 || elements.length > 5) errors.push(`${where}/elements: 1 to 5 elements`);
  elements.forEach((element, position) => {
    const at = `${where}/elements/${position}`;
    if (element.type !== "feedback_buttons" && element.type !== "icon_button") {
      errors.push(`${at}/type: must be feedback_buttons or icon_button`);
      return;
    }
    if (element.type !== "feedback_buttons") return;
    if (typeof element.action_id !== "string") errors.push(`${at}/action_id: required`);
    tooLong(errors, `${at}/action_id`, element.action_id, 255);
    unique(actionIds, element.action_id, `${at}/action_id`);
    for (const side of ["positive_button", "negative_button"] as const) {
      const button = element[side] as Record<string, unknown> | undefined;
      if (button === undefined) {
        errors.push(`${at}/${side}: required`);
        continue;
      }
      plainText(errors, `${at}/${side}/text`, button.text, 75);
      if (typeof button.value !== "string") errors.push(`${at}/${side}/value: required`);
      tooLong(errors, `${at}/${side}/value`, button.value, 2000);
      tooLong(errors, `${at}/${side}/accessibility_label`, button.accessibility_label, 75);
    }
  });
}

function confirmErrors(errors: string[], where: string, raw: unknown): void {
  const confirm = (raw ?? {}) as Record<string, unknown>;
  plainText(errors, `${where}/title`, confirm.title, 100);
  if (textOf(confirm.text) === undefined) errors.push(`${where}/text: required`);
  tooLong(errors, `${where}/text`, textOf(confirm.text), 300);
  plainText(errors, `${where}/confirm`, confirm.confirm, 30);
  plainText(errors, `${where}/deny`, confirm.deny, 30);
}

function plainText(errors: string[], where: string, raw: unknown, max: number): void {
  const text = raw as { type?: unknown } | undefined;
  if (text?.type !== "plain_text" || textOf(text) === undefined) {
    errors.push(`${where}: must be a plain_text object`);
    return;
  }
  tooLong(errors, where, textOf(text), max);
}

function textOf(raw: unknown): string | undefined {
  const text = (raw as { text?: unknown } | undefined)?.text;
  return typeof text === "string" ? text : undefined;
}

function tooLong(errors: string[], where: string, value: unknown, max: number): void {
  if (typeof value === "string" && [...value].length > max)
    errors.push(`${where}: more than ${max} characters`);
}
