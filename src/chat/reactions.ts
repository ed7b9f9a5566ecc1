/** One role of the reaction vocabulary (DESIGN.md §1): what it means and who sets it. */
export interface ReactionRole {
  /** Default emoji name: what Slack reacts with, and what `THREADLINE_REACTIONS` / `reactions` override. */
  emoji: string;
  /** The Unicode emoji of the default, for platforms without named emoji (Discord, the playground). */
  unicode: string;
  /** What the reaction means, in a few words. */
  meaning: string;
  /**
   * Set by the bot only, or by people too: a role people set is one the gateway acts on (and Slack's
   * adapter listens for). `on` is where the playground's toolbar offers it: user messages, or any message.
   */
  setBy: "bot" | { on: "user" | "any"; label: string };
  /** For a queue mark: the disposition it shows, and the one a person's reaction switches a queued reply to. */
  disposition?: "steer" | "followUp" | "interrupt";
}

const TABLE = {
  seen: { emoji: "eyes", unicode: "👀", meaning: "seen, run starting", setBy: "bot" },
  steer: {
    emoji: "compass",
    unicode: "🧭",
    meaning: "queued as steer; reacting switches a queued reply to steer",
    setBy: { on: "user", label: "steer" },
    disposition: "steer",
  },
  followUp: {
    emoji: "hourglass_flowing_sand",
    unicode: "⏳",
    meaning: "queued as follow-up; reacting switches a queued reply to follow-up",
    setBy: { on: "user", label: "follow-up" },
    disposition: "followUp",
  },
  interrupt: {
    emoji: "zap",
    unicode: "⚡",
    meaning: "interrupt: deliver the queued reply now, cutting the model's streaming answer",
    setBy: { on: "user", label: "interrupt now" },
    disposition: "interrupt",
  },
  delivered: { emoji: "white_check_mark", unicode: "✅", meaning: "delivered to the agent", setBy: "bot" },
  refused: { emoji: "warning", unicode: "⚠️", meaning: "refused (queue full, not stored)", setBy: "bot" },
  notProcessed: {
    emoji: "black_square_for_stop",
    unicode: "⏹️",
    meaning: "not processed (the run was stopped)",
    setBy: "bot",
  },
  stop: {
    emoji: "octagonal_sign",
    unicode: "🛑",
    meaning: "stop the run (its requester or an approver)",
    setBy: { on: "any", label: "stop" },
  },
} satisfies Record<string, ReactionRole>;

/** A role of the reaction vocabulary. */
export type ReactionRoleName = keyof typeof TABLE;

/**
 * The reaction vocabulary, by role — the one table config (`THREADLINE_REACTIONS`, `reactions`), the gateway,
 * Slack's watch list and the playground page read. Adding a role here (and what the gateway does with it)
 * is all a new reaction needs.
 */
export const REACTION_ROLES: Readonly<Record<ReactionRoleName, ReactionRole>> = TABLE;

/** The roles, in the table's order. */
export const REACTION_ROLE_NAMES = Object.keys(TABLE) as ReactionRoleName[];

/**
 * Emoji names for the reaction vocabulary, by role. Slack uses the names; Discord and the playground use
 * the Unicode emoji from {@link EMOJI_BY_NAME} (custom names pass through unchanged).
 */
export type ReactionNames = Record<ReactionRoleName, string>;

export const DEFAULT_REACTIONS: ReactionNames = Object.fromEntries(
  REACTION_ROLE_NAMES.map((role) => [role, REACTION_ROLES[role].emoji]),
) as ReactionNames;

/** Unicode for the default names (platforms without named emoji). */
export const EMOJI_BY_NAME: Readonly<Record<string, string>> = Object.fromEntries(
  REACTION_ROLE_NAMES.map((role) => [REACTION_ROLES[role].emoji, REACTION_ROLES[role].unicode]),
);

/** The emoji names people react with that the gateway acts on (every role not set by the bot alone). */
export function watchedReactions(names: ReactionNames): string[] {
  return REACTION_ROLE_NAMES.filter((role) => REACTION_ROLES[role].setBy !== "bot").map(
    (role) => names[role],
  );
}

/** The role `emoji` has in `names` among those people set, or `undefined`. */
export function reactionRoleOf(names: ReactionNames, emoji: string): ReactionRoleName | undefined {
  return REACTION_ROLE_NAMES.find((role) => REACTION_ROLES[role].setBy !== "bot" && names[role] === emoji);
}

/** The queue mark (emoji name in `names`) of `disposition`, or `undefined` for one without a mark. */
export function queueMarkOf(names: ReactionNames, disposition: string): string | undefined {
  const role = REACTION_ROLE_NAMES.find((candidate) => REACTION_ROLES[candidate].disposition === disposition);
  return role === undefined ? undefined : names[role];
}

/** The Unicode emoji for a name (or the input when it is not a known name). */
export function emojiFor(name: string): string {
  return EMOJI_BY_NAME[name] ?? name;
}

/** The name for a Unicode emoji (or the input when it is not a known emoji). */
export function emojiName(emoji: string): string {
  for (const [name, unicode] of Object.entries(EMOJI_BY_NAME)) {
    if (unicode === emoji || unicode.replace("\uFE0F", "") === emoji) return name;
  }
  return emoji;
}
