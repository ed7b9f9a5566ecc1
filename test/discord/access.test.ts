import { describe, expect, it } from "vitest";
import { type DiscordAccess, isAllowed, OPEN_ACCESS } from "../../src/discord/index.js";

const guildEvent = { guildId: "G1", channelIds: ["T1", "C1"], userId: "U1", roleIds: ["R1"] };
const dmEvent = { guildId: undefined, channelIds: ["D1"], userId: "U1", roleIds: [] };
const access = (overrides: Partial<DiscordAccess>): DiscordAccess => ({ ...OPEN_ACCESS, ...overrides });

describe("Discord access lists", () => {
  it("lets everyone in when nothing is configured", () => {
    expect(isAllowed(OPEN_ACCESS, guildEvent)).toBe(true);
    expect(isAllowed(OPEN_ACCESS, dmEvent)).toBe(true);
  });

  it("restricts guilds and channels; a thread passes through its parent", () => {
    expect(isAllowed(access({ guilds: ["G2"] }), guildEvent)).toBe(false);
    expect(isAllowed(access({ guilds: ["G1"] }), guildEvent)).toBe(true);
    expect(isAllowed(access({ channels: ["C1"] }), guildEvent)).toBe(true);
    expect(isAllowed(access({ channels: ["C2"] }), guildEvent)).toBe(false);
    expect(isAllowed(access({ guilds: ["G2"], channels: ["C2"] }), dmEvent)).toBe(true);
  });

  it("admits listed users or members holding a listed role", () => {
    expect(isAllowed(access({ users: ["U2"] }), guildEvent)).toBe(false);
    expect(isAllowed(access({ users: ["U1"] }), guildEvent)).toBe(true);
    expect(isAllowed(access({ roles: ["R1"] }), guildEvent)).toBe(true);
    expect(isAllowed(access({ roles: ["R2"] }), guildEvent)).toBe(false);
    expect(isAllowed(access({ roles: ["R1"] }), dmEvent)).toBe(false);
    expect(isAllowed(access({ roles: ["R1"], users: ["U1"] }), dmEvent)).toBe(true);
  });

  it("can turn DMs off", () => {
    expect(isAllowed(access({ directMessages: false }), dmEvent)).toBe(false);
    expect(isAllowed(access({ directMessages: false }), guildEvent)).toBe(true);
  });
});
