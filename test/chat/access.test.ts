import { describe, expect, it } from "vitest";
import { allowed, type ChatLogger, normalizeAccess } from "../../src/chat/index.js";
import { type DiscordAccess, isAllowed, OPEN_ACCESS } from "../../src/discord/index.js";

function recordingLog(): { log: ChatLogger; warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, log: { info() {}, warn: (_fields, message) => warnings.push(message), error() {} } };
}

const dmEvent = { guildId: undefined, channelIds: ["D1"], userId: "U1", roleIds: [] };

describe("the shared access settings", () => {
  it("an empty list allows every id; a list allows only its ids", () => {
    expect(allowed([], undefined)).toBe(true);
    expect(allowed(["U1"], "U1")).toBe(true);
    expect(allowed(["U1"], "U2")).toBe(false);
    expect(allowed(["U1"], undefined)).toBe(false);
  });

  it("reads the old spelling allowDMs as directMessages, with a deprecation warning", () => {
    const { log, warnings } = recordingLog();
    const { directMessages: _, ...legacy } = OPEN_ACCESS;
    const access = normalizeAccess<DiscordAccess>({ ...legacy, allowDMs: false }, log, "discord");
    expect(access).toEqual({ ...OPEN_ACCESS, directMessages: false });
    expect(isAllowed(access, dmEvent)).toBe(false);
    expect(warnings).toEqual(["discord: access.allowDMs is deprecated; spell it access.directMessages"]);
  });

  it("takes directMessages as given and logs nothing; it wins over allowDMs and defaults to true", () => {
    const { log, warnings } = recordingLog();
    expect(normalizeAccess<DiscordAccess>({ ...OPEN_ACCESS, directMessages: false }, log, "discord")).toEqual(
      {
        ...OPEN_ACCESS,
        directMessages: false,
      },
    );
    expect(warnings).toEqual([]);
    const { directMessages: _, ...unset } = OPEN_ACCESS;
    expect(normalizeAccess<DiscordAccess>(unset, log, "discord").directMessages).toBe(true);
    expect(
      normalizeAccess<DiscordAccess>(
        { ...OPEN_ACCESS, directMessages: true, allowDMs: false },
        log,
        "discord",
      ).directMessages,
    ).toBe(true);
  });
});
