import { describe, expect, it } from "vitest";
import {
  DEFAULT_REACTIONS,
  EMOJI_BY_NAME,
  queueMarkOf,
  REACTION_ROLE_NAMES,
  REACTION_ROLES,
  reactionRoleOf,
  watchedReactions,
} from "../../src/chat/index.js";
import { validateConfig } from "../../src/config/config-schema.js";
import { parseEnv } from "../../src/config/env.js";

describe("the reaction table", () => {
  it("is the vocabulary of DESIGN.md §1, defaults and Unicode included", () => {
    expect(DEFAULT_REACTIONS).toEqual({
      seen: "eyes",
      steer: "compass",
      followUp: "hourglass_flowing_sand",
      interrupt: "zap",
      delivered: "white_check_mark",
      refused: "warning",
      notProcessed: "black_square_for_stop",
      stop: "octagonal_sign",
    });
    expect(EMOJI_BY_NAME).toMatchObject({ compass: "🧭", zap: "⚡", octagonal_sign: "🛑" });
  });

  it("the gateway and Slack's watch list act on the roles people set, with the configured names", () => {
    const names = { ...DEFAULT_REACTIONS, stop: "no_entry", interrupt: "rocket" };
    expect(watchedReactions(names)).toEqual(["compass", "hourglass_flowing_sand", "rocket", "no_entry"]);
    expect(reactionRoleOf(names, "no_entry")).toBe("stop");
    expect(reactionRoleOf(names, "rocket")).toBe("interrupt");
    // A mark only the bot sets is no command, and the replaced default means nothing now.
    expect(reactionRoleOf(names, "white_check_mark")).toBeUndefined();
    expect(reactionRoleOf(names, "octagonal_sign")).toBeUndefined();
    expect(queueMarkOf(names, "interrupt")).toBe("rocket");
    expect(queueMarkOf(names, "prompt")).toBeUndefined();
  });

  it("THREADLINE_REACTIONS and the config module take exactly the table's roles", () => {
    const pairs = REACTION_ROLE_NAMES.map((role) => `${role}=custom_${role.toLowerCase()}`).join(",");
    const env = parseEnv({ THREADLINE_REACTIONS: pairs });
    expect(Object.keys(env.THREADLINE_REACTIONS)).toEqual(REACTION_ROLE_NAMES);
    expect(() => parseEnv({ THREADLINE_REACTIONS: "rerun=repeat" })).toThrow(
      new RegExp(`roles: ${REACTION_ROLE_NAMES.join(", ")}`),
    );

    const reactions = Object.fromEntries(
      REACTION_ROLE_NAMES.map((role) => [role, REACTION_ROLES[role].emoji]),
    );
    expect(validateConfig("threadline.config.mjs", { reactions }).problems).toEqual([]);
    expect(validateConfig("threadline.config.mjs", { reactions: { rerun: "repeat" } }).problems).toEqual([
      expect.stringContaining("threadline.config.mjs: reactions.rerun is not a setting Threadline knows"),
    ]);
  });
});
