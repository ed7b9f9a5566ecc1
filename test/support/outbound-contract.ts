import { describe, expect, it } from "vitest";
import type { ApprovalCard, ChatOutbound, ThreadRef } from "../../src/chat/index.js";
import { until } from "./async.js";

/** One {@link ChatOutbound} under test, with the platform (or its fake) to read the results from. */
export interface OutboundUnderTest {
  outbound: ChatOutbound;
  /** A fresh thread with one user message in it. */
  thread: ThreadRef;
  /** The id of that user message (reactions go on it). */
  userMessageId: string;
  /** Texts of the bot's live messages in the thread (approval cards included), oldest first. */
  texts(): Promise<string[]>;
  /** The bot's reactions on a message (the platform's names, any order). */
  reactions(messageId: string): Promise<string[]>;
  /** Frees what `setup` opened. */
  close(): Promise<void>;
}

const card = (state: ApprovalCard["state"]): ApprovalCard => ({
  approvalId: "ap-contract",
  toolName: "deploy",
  argumentsText: "service: api",
  approvers: [],
  requesterName: "Alice",
  expiresAt: Date.UTC(2026, 0, 2, 12, 0),
  state,
});

/**
 * The {@link ChatOutbound} contract (src/chat/types.ts), run against every implementation: what a post,
 * edit and delete leave in the thread; idempotent reactions; `setStatus(null)` only clears the status and
 * `endRun` leaves the final text in the thread exactly once; approval cards are one message each;
 * `notify` reaches the platform; a text of `limits.maxMessageChars` (as `limits.measure` counts) is
 * accepted whole; the dialect's conversions are pure.
 */
export function describeChatOutbound(name: string, setup: () => Promise<OutboundUnderTest>): void {
  describe(`ChatOutbound contract: ${name}`, () => {
    const withSetup = (body: (under: OutboundUnderTest) => Promise<void>) => async () => {
      const under = await setup();
      try {
        await body(under);
      } finally {
        await under.close();
      }
    };

    it(
      "post shows the text, edit replaces it, delete removes the message",
      withSetup(async ({ outbound, thread, texts }) => {
        const first = await outbound.post(thread, "first reply");
        const second = await outbound.post(thread, "second reply");
        expect(await texts()).toEqual(["first reply", "second reply"]);
        await outbound.edit(thread, first.id, "first reply, edited");
        expect(await texts()).toEqual(["first reply, edited", "second reply"]);
        await outbound.delete(thread, second.id);
        expect(await texts()).toEqual(["first reply, edited"]);
      }),
    );

    it(
      "react and unreact are idempotent",
      withSetup(async ({ outbound, thread, userMessageId, reactions }) => {
        await outbound.react(thread, userMessageId, "eyes");
        await outbound.react(thread, userMessageId, "eyes");
        expect(await reactions(userMessageId)).toHaveLength(1);
        await outbound.unreact(thread, userMessageId, "eyes");
        await outbound.unreact(thread, userMessageId, "eyes");
        expect(await reactions(userMessageId)).toEqual([]);
      }),
    );

    it(
      "setStatus(null) only clears the status; endRun leaves the final text in the thread once",
      withSetup(async ({ outbound, thread, texts }) => {
        await outbound.setStatus(thread, "is thinking…");
        const draft = await outbound.post(thread, "Draft");
        await outbound.setStatus(thread, null);
        await outbound.setStatus(thread, "is thinking…");
        await outbound.edit(thread, draft.id, "Final answer");
        await outbound.endRun(thread);
        // A platform may repost the final text and remove the draft in the background.
        await until(async () => (await texts()).length === 1);
        expect(await texts()).toEqual(["Final answer"]);
        await outbound.endRun(thread);
        expect(await texts()).toEqual(["Final answer"]);
      }),
    );

    it(
      "an approval card is one message, updated in place",
      withSetup(async ({ outbound, thread, texts }) => {
        const posted = await outbound.postApproval(thread, card({ kind: "pending", waitingMessages: 0 }));
        expect(posted.id).not.toBe("");
        expect(await texts()).toHaveLength(1);
        const before = await texts();
        const decided = card({ kind: "denied", by: { id: "U1", name: "Bob" }, at: Date.UTC(2026, 0, 2, 11) });
        await outbound.updateApproval(thread, posted.id, decided);
        const after = await texts();
        expect(after).toHaveLength(1);
        expect(after).not.toEqual(before);
      }),
    );

    it(
      "notify is accepted by the platform",
      withSetup(async ({ outbound, thread }) => {
        await expect(outbound.notify(thread, "U0ALICE", "only you see this")).resolves.toBeUndefined();
      }),
    );

    it(
      "accepts a text of exactly limits.maxMessageChars, whole",
      withSetup(async ({ outbound, thread, texts }) => {
        const measure = outbound.limits.measure ?? ((text: string) => text.length);
        const text = "a".repeat(outbound.limits.maxMessageChars);
        expect(measure(text)).toBe(outbound.limits.maxMessageChars);
        await outbound.post(thread, text);
        expect(await texts()).toEqual([text]);
      }),
    );

    it(
      "brings a dialect whose conversions are pure and deterministic",
      withSetup(async ({ outbound }) => {
        const { dialect } = outbound;
        const markdown = "**bold** & <tag> `a < b`\n\n- one\n- two";
        expect(dialect.toMarkup(markdown)).toBe(dialect.toMarkup(markdown));
        const convert = dialect.createConverter?.() ?? dialect.toMarkup;
        expect(convert(markdown)).toBe(dialect.toMarkup(markdown));
        expect(dialect.bold(dialect.escape("x"))).toContain("x");
        expect(dialect.subtext("3 turns")).toContain("3 turns");
        expect(dialect.mention("U1")).toContain("U1");
        expect(dialect.timestamp(0, "absolute")).not.toBe("");
      }),
    );
  });
}
