import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import { signatureHeaders } from "../fakes/slack-events.js";
import { SlackE2E, userTexts } from "./e2e-harness.js";

/** The HTTP Events API, in a workspace without native streaming (post + chat.update). */
let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start({ mode: "http", slack: { streaming: false } });
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

const fences = (text: string) => text.split("\n").filter((line) => line.startsWith("```")).length;

/** ~30,000 characters of Markdown: paragraphs and code blocks (one longer than a Slack message). */
function longAnswer(): { markdown: string; markers: string[] } {
  const parts: string[] = [];
  const markers: string[] = [];
  for (let section = 0; section < 12; section++) {
    const words = `Paragraph ${section} explains step ${section} with some detail.`;
    markers.push(`Paragraph ${section} `);
    parts.push(`${words} ${"More words follow here. ".repeat(40)}`);
    const lines = section === 5 ? 160 : 25;
    const code = Array.from({ length: lines }, (_, i) => {
      const marker = `code-${section}-${String(i).padStart(3, "0")}`;
      markers.push(marker);
      return `console.log("${marker}", a < b && c > d);`;
    });
    parts.push(`\`\`\`js\n${code.join("\n")}\n\`\`\``);
  }
  return { markdown: parts.join("\n\n"), markers };
}

describe("Slack over the HTTP Events API, rendering without native streaming", () => {
  it("rejects an event with a bad signature and answers a signed mention by posting and editing", async () => {
    const body = JSON.stringify({
      type: "event_callback",
      team_id: "T0FAKE",
      event: { type: "app_mention" },
    });
    const url = e2e.slack.delivery.httpUrl!;
    const forged = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...signatureHeaders("wrong-secret", body) },
      body,
    });
    expect(forged.status).toBe(401);

    const tag = e2e.tag(textReply("Hello over HTTP, all good.", { pieceSize: 2 }));
    const mention = e2e.mention(tag, "hi");
    await e2e.waitForReaction(mention, "eyes");
    await e2e.waitForRunsEnded(mention);
    const [reply] = e2e.botMessages(mention);
    expect(reply?.streamed).toBe(false);
    expect(reply?.text).toContain("Hello over HTTP, all good.");
    expect(userTexts(e2e.requests(tag)[0]!)).toEqual([`Alice: [${tag}] hi`]);
    // Streaming support is detected once per workspace: one refused attempt, then posts.
    const second = e2e.mention(e2e.tag(textReply("Second.")), "again");
    await e2e.waitForRunsEnded(second);
    expect(e2e.slack.callsOf("chat.startStream").map((call) => call.outcome)).toEqual(["unknown_method"]);
  });

  it("respects a 429 on chat.update (Retry-After) and still shows the whole answer", async () => {
    const answer = Array.from({ length: 40 }, (_, i) => `part${i}`).join(" ");
    const tag = e2e.tag({ ...textReply(answer, { pieceSize: 6 }), delayMs: 60 });
    e2e.slack.failNext("chat.update", { status: 429, retryAfterSeconds: 1 });
    const mention = e2e.mention(tag, "go slowly");
    await e2e.waitForRunsEnded(mention);
    const updates = e2e.slack
      .callsOf("chat.update")
      .filter((call) => call.args.ts === e2e.botMessages(mention)[0]?.ts);
    expect(updates[0]?.outcome).toBe("ratelimited");
    expect(updates.slice(1).every((call) => call.outcome === "ok")).toBe(true);
    expect(e2e.botMessages(mention)[0]?.text).toContain(answer);
  });

  it("splits a 30,000-character answer with code blocks into Slack-sized messages, never inside a fence", async () => {
    const { markdown, markers } = longAnswer();
    expect(markdown.length).toBeGreaterThan(30_000);
    const tag = e2e.tag(textReply(markdown, { pieceSize: 1500 }));
    const mention = e2e.mention(tag, "write the long one");
    await e2e.waitForRunsEnded(mention);
    const messages = e2e.botMessages(mention);
    expect(messages.length).toBeGreaterThanOrEqual(8);
    for (const message of messages) {
      expect(Buffer.byteLength(message.text, "utf8")).toBeLessThanOrEqual(4000);
      expect(fences(message.text) % 2).toBe(0);
    }
    const all = messages.map((message) => message.text).join("\n");
    expect(all).toContain("a &lt; b &amp;&amp; c &gt; d");
    let position = -1;
    for (const marker of markers) {
      const found = all.indexOf(marker, position + 1);
      expect(found, marker).toBeGreaterThan(position);
      expect(all.indexOf(marker, found + 1), `${marker} twice`).toBe(-1);
      position = found;
    }
  });

  it("measures Slack's limit in bytes: a multi-byte answer is split so no message exceeds 4,000 bytes", async () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Absatz ${i}: ${"Größe € ".repeat(40)}`);
    const tag = e2e.tag(textReply(paragraphs.join("\n\n"), { pieceSize: 2000 }));
    const mention = e2e.mention(tag, "in German please");
    await e2e.waitForRunsEnded(mention);
    const messages = e2e.botMessages(mention);
    for (const message of messages) expect(Buffer.byteLength(message.text, "utf8")).toBeLessThanOrEqual(4000);
    const all = messages.map((message) => message.text).join("\n");
    for (let i = 0; i < 30; i++) expect(all).toContain(`Absatz ${i}:`);
  });
});
