/**
 * Per-thread settings: a person changes one for the whole thread with a command message
 * (`!set <name> <value>`), and it stays until changed again. They live in the thread's meta hash (field
 * `setting:<name>`), so they share the thread's retention, are written by intake's submit script (the
 * command is deduplicated like any message) and reach the worker with the run's claim.
 *
 * {@link THREAD_SETTINGS} is the one declaration: the command parser, the store and the reader
 * ({@link readThreadSettings}, via `parseMeta`) all derive from it. A new setting is an entry here plus the
 * code that uses its value: the run (`ThreadMeta.settings` in run-session.ts) or the app's agent setup
 * (`ToolRunContext.settings` in its `systemPrompt` / `tools` hooks).
 */

/** One per-thread setting: what it does, what a person may type, and how a stored value reads. */
export interface ThreadSettingSpec<T> {
  /** What the setting changes, in a few words (the usage notice quotes it). */
  description: string;
  /** The values a person may type, lower case (quoted when one does not fit). */
  values: readonly string[];
  /** A typed or stored value (lower case, trimmed) as the setting's type; undefined when it does not fit. */
  parse(raw: string): T | undefined;
}

function onOff(description: string): ThreadSettingSpec<boolean> {
  return {
    description,
    values: ["on", "off"],
    parse: (raw) => (raw === "on" ? true : raw === "off" ? false : undefined),
  };
}

/** Every per-thread setting, by the name a person types. */
export const THREAD_SETTINGS = {
  /** Overrides the runs config's `footer` in one thread. */
  footer: onOff("the run footer (turns, tool calls, tokens, cost) under each answer"),
} as const satisfies Record<string, ThreadSettingSpec<unknown>>;

/** The name of a per-thread setting. */
export type ThreadSettingName = keyof typeof THREAD_SETTINGS;

/** A thread's settings: only those someone set (an absent one means the runs config's default). */
export type ThreadSettings = {
  [K in ThreadSettingName]?: NonNullable<ReturnType<(typeof THREAD_SETTINGS)[K]["parse"]>>;
};

const NAMES = Object.keys(THREAD_SETTINGS) as ThreadSettingName[];

/** The command word, matched case-insensitively at the start of a message, then whitespace or the end. */
export const SET_COMMAND = "!set";

const FIELD_PREFIX = "setting:";

/** The meta-hash field that stores setting `name`. */
export function settingField(name: ThreadSettingName): string {
  return `${FIELD_PREFIX}${name}`;
}

/** What a `!set` message asks for: a change to store, or why it cannot be made (nothing is stored). */
export type SettingCommand =
  | { kind: "set"; name: ThreadSettingName; value: string; notice: string }
  | { kind: "invalid"; reason: string };

function usage(): string {
  const list = NAMES.map((name) => {
    const spec = THREAD_SETTINGS[name];
    return `\`${name}\` ${spec.values.join("/")}: ${spec.description}`;
  }).join("; ");
  return `Use \`${SET_COMMAND} <setting> <value>\`. Settings: ${list}.`;
}

/**
 * A message that starts with {@link SET_COMMAND} as its own word is a setting command: `set` with the
 * setting's name, the value as stored (lower case) and the private notice confirming it; `invalid` with
 * the reason for an unknown setting, a value that does not fit or a missing part. Any other text is not a
 * command (undefined). Never throws.
 */
export function parseSettingCommand(text: string): SettingCommand | undefined {
  const words = text.trim().toLowerCase().split(/\s+/);
  if (words[0] !== SET_COMMAND) return undefined;
  const [, name, value, ...extra] = words;
  if (name === undefined || value === undefined || extra.length > 0)
    return { kind: "invalid", reason: usage() };
  if (!(NAMES as string[]).includes(name)) {
    return { kind: "invalid", reason: `There is no setting \`${name}\`. ${usage()}` };
  }
  const spec: ThreadSettingSpec<unknown> = THREAD_SETTINGS[name as ThreadSettingName];
  if (spec.parse(value) === undefined) {
    return {
      kind: "invalid",
      reason: `\`${name}\` takes ${spec.values.map((v) => `\`${v}\``).join(" or ")}, not \`${value}\`.`,
    };
  }
  return {
    kind: "set",
    name: name as ThreadSettingName,
    value,
    notice: `\`${name}\` is now \`${value}\` in this thread, from the next answer on.`,
  };
}

/** The settings stored in a thread's meta hash; fields that no longer parse are left out. Never throws. */
export function readThreadSettings(meta: Readonly<Record<string, string | undefined>>): ThreadSettings {
  const settings: Record<string, unknown> = {};
  for (const name of NAMES) {
    const raw = meta[settingField(name)];
    const value = raw === undefined ? undefined : THREAD_SETTINGS[name].parse(raw);
    if (value !== undefined) settings[name] = value;
  }
  return settings as ThreadSettings;
}
