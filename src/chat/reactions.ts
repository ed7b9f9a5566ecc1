/**
 * Emoji names for the reaction vocabulary (DESIGN.md §1). Slack uses the names; Discord and the
 * playground use the Unicode emoji from {@link EMOJI_BY_NAME} (custom names pass through unchanged).
 */
export interface ReactionNames {
  /** Bot, on a mention: seen, run starting. */
  seen: string;
  /** Bot ack for a queued steer; the author reacts with it to switch to steer. */
  steer: string;
  /** Bot ack for a queued follow-up; the author reacts with it to switch to follow-up. */
  followUp: string;
  /**
   * Bot ack for a queued interrupt; the author (or an approver) reacts with it to deliver the message now:
   * the model's streaming answer is cut and the next request starts with the message.
   */
  interrupt: string;
  /** Bot, replacing the queue mark once the message reached the agent. */
  delivered: string;
  /** Bot: refused (queue full). */
  refused: string;
  /** Bot: not processed (run stopped). */
  notProcessed: string;
  /** Requester or approver: stop the run. */
  stop: string;
}

export const DEFAULT_REACTIONS: ReactionNames = {
  seen: "eyes",
  steer: "compass",
  followUp: "hourglass_flowing_sand",
  interrupt: "zap",
  delivered: "white_check_mark",
  refused: "warning",
  notProcessed: "black_square_for_stop",
  stop: "octagonal_sign",
};

/** Unicode for the default names (platforms without named emoji). */
export const EMOJI_BY_NAME: Readonly<Record<string, string>> = {
  eyes: "👀",
  compass: "🧭",
  hourglass_flowing_sand: "⏳",
  zap: "⚡",
  white_check_mark: "✅",
  warning: "⚠️",
  black_square_for_stop: "⏹️",
  octagonal_sign: "🛑",
};

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
