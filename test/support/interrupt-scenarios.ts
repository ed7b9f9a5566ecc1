import { describe, expect, it } from "vitest";
import { chunks, type FakeReply, textReply, toolCallReply } from "../fakes/openai-server.js";
import { toolResults, userTexts } from "./model-requests.js";
import type { ScriptedE2E } from "./scripted-e2e.js";

/** The people of the scenarios: Alice asks (and may decide), Bob is neither the author nor an approver. */
export type Person = "alice" | "bob";
/** The marks on a reply: 🧭 steering, ⚡ interrupt, ⏳ follow-up, ✅ read. */
export type Mark = "steer" | "zap" | "followUp" | "done";

/**
 * One platform's end-to-end harness (gateway and worker processes) as the shared scenarios drive it.
 * `Thread` is whatever the platform's helpers need to find a conversation; `Message` is its fake's message
 * (a reply, an approval card, a reminder). Methods that assert do so the platform's way. The scenarios
 * await what every method returns, so each may be synchronous or not.
 */
export interface InterruptPlatform<Thread, Message> {
  /** The harness, once `beforeAll` started it. */
  harness(): ScriptedE2E;
  /** Alice mentions the bot with the tag's `text` in a new conversation. */
  start(tag: string, text: string): Thread | Promise<Thread>;
  /** Resolves once the bot shows `text` in the thread. */
  waitForText(thread: Thread, text: string): Promise<unknown>;
  /** Resolves once the thread's runs ended after the bot showed `answer`. */
  waitForRunsEnded(thread: Thread, answer: string): Promise<unknown>;
  /** `person` writes `text` in the thread. */
  reply(thread: Thread, text: string, person?: Person): Message | Promise<Message>;
  /** `person` reacts with `mark`; resolves once the platform took the reaction. */
  react(person: Person, message: Message, mark: Mark): Promise<unknown>;
  /** Resolves once the bot shows `mark` on `message` (the platform's way: among others, or alone). */
  waitForMark(message: Message, mark: Mark): Promise<unknown>;
  /** Waits until `message` settled on ✅ alone and asserts the marks the bot showed on it were `marks`. */
  expectMarks(message: Message, marks: Mark[]): Promise<void>;
  /** What the thread shows, as one text. */
  shown(thread: Thread): string | Promise<string>;
  /** The reply's intake disposition in Redis (`followUp`, `steer`, …). */
  disposition(thread: Thread, message: Message): Promise<string | null>;
  /** The thread's lease key. */
  lease(thread: Thread): string;

  /** Resolves with the thread's approval cards once there are at least `count`, oldest first. */
  waitForCards(thread: Thread, count: number): Promise<Message[]>;
  /** The thread's approval cards now. */
  cards(thread: Thread): Message[] | Promise<Message[]>;
  /** What a card shows of the call (its arguments). */
  cardText(card: Message): string;
  /** `person` clicks a card's button. */
  click(person: Person, card: Message, decision: "approve" | "deny"): unknown;
  /** Resolves once the card shows it was approved or denied by Alice. */
  waitForDecision(card: Message, outcome: "approved" | "denied"): Promise<unknown>;
  /** Asserts the card is still pending (no decision, its buttons shown). */
  expectPending(card: Message): unknown;
  /** Resolves with the text of the first private notice `person` got in (or about) the thread. */
  waitForNotice(thread: Thread, person: Person): Promise<string>;
  /** Asserts `person` got no private notice. */
  expectNoNotice(person: Person): void;
  /** The platform's mention of `person` in a message text (`<@id>`). */
  mentionOf(person: Person): string;
  /** The bot's reminders in the thread: plain messages that mention Alice. */
  reminders(thread: Thread): Message[] | Promise<Message[]>;
  /** A reminder's text. */
  textOf(message: Message): string;
  /** Asserts what else the platform promises of a reminder (where it is, whom it notifies). */
  expectReminder(thread: Thread, reminder: Message): void;
}

/** What {@link hangingAnswer} writes before it hangs. */
const CUT_TEXT = "Here is a long answer that";
const CUT_LINE = `${CUT_TEXT}\n\n[This answer was cut off here by a new message from Alice.]`;
const WAITING = "Still waiting for Approve/Deny on `deploy`; your message will be read after it.";

/** A streamed answer that writes {@link CUT_TEXT} and then keeps the connection open until the client leaves. */
function hangingAnswer(): FakeReply {
  return {
    kind: "stream",
    chunks: [
      chunks.role(),
      chunks.text("Here is a long "),
      chunks.text("answer that"),
      chunks.finish("stop"),
    ],
    hangAfter: 3,
  };
}

const deploy = (id: string) => toolCallReply([{ id, name: "deploy", arguments: { service: "api" } }]);

/**
 * Issue #18 on a chat platform, with `threadline gateway` and `threadline worker` as separate processes:
 * ⚡ (reaction and `!!` prefix) cuts a streaming answer, only the author or an approver may ⚡ a reply, a
 * text reply while a card waits gets the private notice, the reminder mentions the requester once, and
 * two cards of one batch resolve independently.
 */
export function describeInterruptsAndApprovalWaits<Thread, Message>(
  name: string,
  platform: InterruptPlatform<Thread, Message>,
): void {
  const e2e = () => platform.harness();
  /** The messages of the model request `index` of a tag's conversation. */
  const messagesOf = (tag: string, index: number): { role: string; content: unknown }[] =>
    (e2e().requests(tag)[index]?.body as { messages?: { role: string; content: unknown }[] } | undefined)
      ?.messages ?? [];

  describe(`⚡ on ${name} (gateway and worker processes)`, { timeout: 60_000 }, () => {
    it("a ⚡ reaction on a queued reply cuts the streaming answer; the next request carries the cut text and the reply", async () => {
      const tag = e2e().tag(hangingAnswer(), textReply("A haiku it is."));
      const thread = await platform.start(tag, "write an essay");
      await platform.waitForText(thread, CUT_TEXT);
      const reply = await platform.reply(thread, "no, a haiku");
      await platform.waitForMark(reply, "steer");
      await platform.react("alice", reply, "zap");
      await platform.waitForRunsEnded(thread, "A haiku it is.");

      expect(await e2e().requests(tag)[0]!.outcome).toBe("client-disconnected");
      expect(e2e().requests(tag)).toHaveLength(2);
      const next = messagesOf(tag, 1).filter((message) => message.role !== "system");
      expect(next.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
      expect(next[1]?.content).toBe(CUT_LINE);
      expect(userTexts(e2e().requests(tag)[1]).at(-1)).toBe("Alice: no, a haiku");

      // The reply's mark went 🧭 → ⚡ → ✅.
      await platform.expectMarks(reply, ["steer", "zap", "done"]);
      // The cut answer stays in the chat, marked, and the new answer follows.
      expect(await platform.shown(thread)).toMatch(
        /Here is a long answer that\s+⚡ _interrupted by Alice_[\s\S]*A haiku it is\./,
      );
    });

    it("a reply starting with `!!` is an interrupt at once, delivered without the prefix", async () => {
      const tag = e2e().tag(hangingAnswer(), textReply("Python then."));
      const thread = await platform.start(tag, "write it in Go");
      await platform.waitForText(thread, CUT_TEXT);
      const reply = await platform.reply(thread, "!! stop, use Python");
      await platform.waitForRunsEnded(thread, "Python then.");

      expect(await e2e().requests(tag)[0]!.outcome).toBe("client-disconnected");
      expect(userTexts(e2e().requests(tag)[1]).at(-1)).toBe("Alice: stop, use Python");
      expect(messagesOf(tag, 1).find((message) => message.role === "assistant")?.content).toBe(CUT_LINE);
      await platform.expectMarks(reply, ["zap", "done"]);
      expect(await platform.shown(thread)).toMatch(/⚡ _interrupted by Alice_[\s\S]*Python then\./);
    });

    it("someone who is neither the author nor an approver cannot ⚡ another person's reply", async () => {
      const tag = e2e().tag(hangingAnswer(), textReply("Shorter."));
      const thread = await platform.start(tag, "write an essay");
      await platform.waitForText(thread, CUT_TEXT);
      const reply = await platform.reply(thread, "shorter please");
      await platform.waitForMark(reply, "steer");
      await platform.react("bob", reply, "zap");
      // Alice's ⏳ after Bob's ⚡ is the barrier: once it shows, Bob's reaction was handled and changed nothing.
      await platform.react("alice", reply, "followUp");
      await platform.waitForMark(reply, "followUp");
      expect(await platform.disposition(thread, reply)).toBe("followUp");
      expect(e2e().requests(tag)).toHaveLength(1);
      expect(e2e().requests(tag)[0]!.clientDisconnected).toBe(false);
      await platform.react("alice", reply, "zap");
      await platform.waitForRunsEnded(thread, "Shorter.");
      await platform.expectMarks(reply, ["steer", "followUp", "zap", "done"]);
      expect(userTexts(e2e().requests(tag)[1]).at(-1)).toBe("Alice: shorter please");
    });
  });

  describe(`approval waits on ${name} (gateway and worker processes)`, { timeout: 60_000 }, () => {
    it("a text reply while a card waits gets the private notice and is read after the decision", async () => {
      const tag = e2e().tag(deploy("n1"), textReply("Deployed, and noted."), textReply("unused"));
      const thread = await platform.start(tag, "deploy the api");
      const [card] = (await platform.waitForCards(thread, 1)) as [Message];
      const reply = await platform.reply(thread, "also tell me when it is done", "bob");
      expect(await platform.waitForNotice(thread, "bob")).toBe(WAITING);
      await platform.waitForMark(reply, "steer");
      expect(e2e().requests(tag)).toHaveLength(1); // the reply decided nothing and started nothing
      await platform.expectPending(card);

      await platform.click("alice", card, "approve");
      await platform.waitForDecision(card, "approved");
      await platform.waitForRunsEnded(thread, "Deployed, and noted.");
      const next = e2e().requests(tag)[1];
      expect(toolResults(next)).toEqual(["deployed api"]);
      expect(userTexts(next).at(-1)).toBe("Bob: also tell me when it is done");
      await platform.waitForMark(reply, "done");
      platform.expectNoNotice("alice");
    });

    it("the reminder mentions the requester once in the thread, also after a heartbeat", async () => {
      const tag = e2e().tag(deploy("r1"), textReply("Deployed after the reminder."));
      const thread = await platform.start(tag, "deploy the api");
      const [card] = (await platform.waitForCards(thread, 1)) as [Message];
      await e2e().until("the reminder", async () => (await platform.reminders(thread)).length > 0);
      const [reminder] = (await platform.reminders(thread)) as [Message];
      expect(platform.textOf(reminder)).toBe(
        `${platform.mentionOf("alice")} \`deploy\` is waiting for your approval: use Approve or Deny on the card above.`,
      );
      platform.expectReminder(thread, reminder);
      // Wait for the worker's next lease heartbeat (it renews the lease at a third of its 30 s), which wakes
      // the approval wait to re-read the record: still one reminder.
      const lease = platform.lease(thread);
      const before = await e2e().redis.pttl(lease);
      await e2e().until(
        "a lease heartbeat",
        async () => (await e2e().redis.pttl(lease)) > before + 1_000,
        30_000,
      );
      expect(await platform.reminders(thread)).toHaveLength(1);
      await platform.click("alice", card, "approve");
      await platform.waitForDecision(card, "approved");
      await platform.waitForRunsEnded(thread, "Deployed after the reminder.");
      expect(await platform.reminders(thread)).toHaveLength(1);
      expect(toolResults(e2e().requests(tag)[1])).toEqual(["deployed api"]);
    });

    it("two calls of one batch that ask get a card each and resolve independently, in reverse order", async () => {
      const tag = e2e().tag(
        toolCallReply([
          { id: "b1", name: "deploy", arguments: { service: "api" } },
          { id: "b2", name: "deploy", arguments: { service: "web" } },
        ]),
        textReply("One deployed, one denied."),
      );
      const thread = await platform.start(tag, "deploy api and web");
      const [apiCard, webCard] = (await platform.waitForCards(thread, 2)) as [Message, Message];
      expect(platform.cardText(apiCard)).toContain("service: api");
      expect(platform.cardText(webCard)).toContain("service: web");
      // The second card first: deny it; the first stays pending.
      await platform.click("alice", webCard, "deny");
      await platform.waitForDecision(webCard, "denied");
      await platform.expectPending(apiCard);
      expect(e2e().requests(tag)).toHaveLength(1);
      await platform.click("alice", apiCard, "approve");
      await platform.waitForDecision(apiCard, "approved");
      await platform.waitForRunsEnded(thread, "One deployed, one denied.");
      expect(e2e().requests(tag)).toHaveLength(2);
      const results = toolResults(e2e().requests(tag)[1]);
      expect(results).toHaveLength(2);
      expect(results[0]).toBe("deployed api");
      expect(results[1]).toContain("denied by Alice");
      expect(await platform.cards(thread)).toHaveLength(2);
    });
  });
}
