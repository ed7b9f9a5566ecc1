import { afterEach, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import type { ToolRunContext } from "../../src/runs/index.js";
import { createGateway } from "../../src/runs/index.js";
import {
  parseSettingCommand,
  readThreadSettings,
  settingField,
  THREAD_SETTINGS,
  type ThreadSettingName,
} from "../../src/runs/thread-settings.js";
import { alice, RunsHarness } from "./harness.js";

describe("setting commands", () => {
  it("reads `!set <setting> <value>` in any case, and only as the message's first word", () => {
    expect(parseSettingCommand("  !SET Footer OFF ")).toMatchObject({
      kind: "set",
      name: "footer",
      value: "off",
    });
    expect(parseSettingCommand("!set footer on")).toMatchObject({ kind: "set", name: "footer", value: "on" });
    expect(parseSettingCommand("please !set footer off")).toBeUndefined();
    expect(parseSettingCommand("!settle this")).toBeUndefined();
    expect(parseSettingCommand("hello")).toBeUndefined();
  });

  it("says why an unknown setting, a value that does not fit or a missing part is not applied", () => {
    expect(parseSettingCommand("!set colour red")).toEqual({
      kind: "invalid",
      reason:
        "There is no setting `colour`. Use `!set <setting> <value>`. Settings: `footer` on/off: the run footer (turns, tool calls, tokens, cost) under each answer.",
    });
    expect(parseSettingCommand("!set footer maybe")).toEqual({
      kind: "invalid",
      reason: "`footer` takes `on` or `off`, not `maybe`.",
    });
    expect(parseSettingCommand("!set footer")).toEqual({
      kind: "invalid",
      reason:
        "Use `!set <setting> <value>`. Settings: `footer` on/off: the run footer (turns, tool calls, tokens, cost) under each answer.",
    });
  });

  it("every declared setting round-trips: each value a person may type is stored and read back as parsed", () => {
    for (const name of Object.keys(THREAD_SETTINGS) as ThreadSettingName[]) {
      const spec = THREAD_SETTINGS[name];
      expect(spec.values.length).toBeGreaterThan(0);
      for (const value of spec.values) {
        const command = parseSettingCommand(`!set ${name} ${value.toUpperCase()}`);
        expect(command).toMatchObject({ kind: "set", name, value });
        expect(readThreadSettings({ [settingField(name)]: value })).toEqual({ [name]: spec.parse(value) });
      }
    }
  });

  it("reads the stored settings from the meta hash, leaving out fields that do not parse", () => {
    expect(readThreadSettings({ "setting:footer": "off", run: "" })).toEqual({ footer: false });
    expect(readThreadSettings({ "setting:footer": "sideways" })).toEqual({});
    expect(readThreadSettings({})).toEqual({});
  });
});

describe("a per-thread setting end to end (intake, worker, gateway)", () => {
  let h: RunsHarness;
  afterEach(async () => {
    await h?.close();
  });

  const footerShown = (texts: string[]) => texts.some((text) => /\b\d+ turns?\b/.test(text));

  it("`!set footer off` is stored for the thread and the next runs there post no footer; `on` brings it back", async () => {
    h = await new RunsHarness({
      script: [{ text: "first" }, { text: "second" }, { text: "third" }],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "hi"));
    expect(footerShown(h.chat.texts(thread))).toBe(true);

    const command = h.message(thread, "!set footer off");
    expect(await h.intake.submit(command)).toEqual({
      kind: "setting",
      name: "footer",
      value: "off",
      notice: "`footer` is now `off` in this thread, from the next answer on.",
    });
    // A replay of the command is a duplicate; it started no run and is not in the transcript.
    expect(await h.intake.submit(command)).toEqual({ kind: "duplicate" });
    expect(await h.redis.hget(h.keys(thread).meta, "setting:footer")).toBe("off");
    expect(await h.redis.pttl(h.keys(thread).meta)).toBeGreaterThan(0);
    expect(await h.redis.hget(h.keys(thread).state, command.id)).toBe("command");
    expect((await h.store.meta(threadId(thread))).settings).toEqual({ footer: false });
    expect(await h.userTexts(thread)).toEqual(["Alice: hi"]);

    const before = h.chat.texts(thread).length;
    const second = await h.intake.submit(h.message(thread, "again"));
    await h.runFinished((second as { runId: string }).runId);
    const secondTexts = h.chat.texts(thread).slice(before);
    expect(secondTexts.join("\n")).toContain("second");
    expect(footerShown(secondTexts)).toBe(false);

    // Another thread keeps the configured footer.
    const other = h.thread("t2");
    h.model.push({ text: "elsewhere" });
    await h.runFinished(await h.mention(other, "hi"));
    expect(footerShown(h.chat.texts(other))).toBe(true);

    expect(await h.intake.submit(h.message(thread, "!set footer on"))).toMatchObject({ kind: "setting" });
    const after = h.chat.texts(thread).length;
    const third = await h.intake.submit(h.message(thread, "once more"));
    await h.runFinished((third as { runId: string }).runId);
    expect(footerShown(h.chat.texts(thread).slice(after))).toBe(true);
  });

  it("an invalid command changes nothing and tells its author why; the gateway takes a mention's 👀 back", async () => {
    h = await new RunsHarness().start();
    const gateway = createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
    const thread = h.thread();
    const bad = h.message(thread, "!set footer maybe", { mentionsBot: true });
    await gateway.message(bad);
    const good = h.message(thread, "!set footer off", { mentionsBot: true });
    await gateway.message(good);
    const key = threadId(thread);
    expect(
      h.chat.ops
        .filter((op) => op.thread === key)
        .map((op) => [op.op, op.messageId ?? op.userId, op.emoji ?? op.text]),
    ).toEqual([
      ["react", bad.id, "eyes"],
      ["unreact", bad.id, "eyes"],
      ["notify", alice.id, "`footer` takes `on` or `off`, not `maybe`."],
      ["react", good.id, "eyes"],
      ["unreact", good.id, "eyes"],
      ["notify", alice.id, "`footer` is now `off` in this thread, from the next answer on."],
    ]);
    expect((await h.store.meta(key)).settings).toEqual({ footer: false });
    // Neither command started a run.
    expect(await h.isActive(thread)).toBe(false);
    expect(await h.transcript(thread)).toEqual([]);
  });

  it("reaches the agent setup's hooks: the run's context carries the settings the run found", async () => {
    const seen: ToolRunContext["settings"][] = [];
    h = await new RunsHarness({
      script: [{ text: "first" }, { text: "second" }],
      agent: {
        systemPrompt: (ctx) => {
          seen.push(ctx.settings);
          return "You are a test bot.";
        },
      },
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "hi"));
    await h.intake.submit(h.message(thread, "!set footer off"));
    const second = await h.intake.submit(h.message(thread, "again"));
    await h.runFinished((second as { runId: string }).runId);
    expect(seen).toEqual([{}, { footer: false }]);
  });

  it("is ignored like any reply in a thread the bot is not part of", async () => {
    h = await new RunsHarness().start();
    const thread = h.thread();
    expect(await h.intake.submit(h.message(thread, "!set footer off"))).toEqual({ kind: "ignored" });
    expect((await h.store.meta(threadId(thread))).settings).toEqual({});
  });
});
