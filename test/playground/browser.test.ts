import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { agentSetupFromEnv } from "../../src/app/agent-setup.js";
import { parseEnv } from "../../src/app/env.js";
import { type GatewayProcess, startGatewayProcess } from "../../src/app/gateway.js";
import { createLogger } from "../../src/app/logger.js";
import { createPlatforms } from "../../src/app/platforms.js";
import { runsConfigFromEnv } from "../../src/app/runs-config.js";
import { startWorkerProcess, type WorkerProcess } from "../../src/app/worker.js";
import { PLAYGROUND_BOT } from "../../src/playground/outbound.js";
import { PlaygroundStore } from "../../src/playground/store.js";
import { playgroundKeys, type RunTool } from "../../src/runs/index.js";
import { FakeOpenAIServer, textReply, toolCallReply } from "../fakes/openai-server.js";
import { deferred } from "../support/async.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";
import { seriousViolations } from "./axe.js";
import { freePort } from "./helpers.js";

/** Debian's Chromium (`apt-get install chromium`); `.ci/run` installs it when missing. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** For review (not committed): the finished run, and the approval card while it waits. */
const SCREENSHOT = "/tmp/playground.png";
const APPROVAL_SCREENSHOT = "/tmp/playground-approval.png";
const FINAL_ANSWER = "Deployed to **production**. Paris is sunny; Berlin is cloudy.";

/** Chromium with a fresh profile; a start failure fails the test with what to do about it. */
async function launchChromium(profile: string): Promise<BrowserContext> {
  try {
    return await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      viewport: { width: 1280, height: 860 },
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    });
  } catch (err) {
    throw new Error(
      `Chromium could not start from ${CHROMIUM} (install Debian's with "apt-get install -y chromium", or set CHROMIUM_PATH): ${(err as Error).message}`,
    );
  }
}

const lookupStarted = deferred();
const lookupGate = deferred();
const streamGate = deferred();
const stopGate = deferred();
const deployCalls: Record<string, unknown>[] = [];

/** Runs until the test lets it finish, so a reply can arrive while it works. */
const lookup: RunTool = {
  name: "lookup",
  description: "Looks up the weather of a city",
  parameters: z.object({ city: z.string() }),
  approval: "never",
  execute: async () => {
    lookupStarted.resolve();
    await lookupGate.promise;
    return { content: [{ type: "text", text: "Paris: sunny" }], details: {} };
  },
};

/** Needs a click on Approve. */
const deploy: RunTool = {
  name: "deploy",
  description: "Deploys the service",
  parameters: z.object({ target: z.string() }),
  approval: "ask",
  execute: async (_id, params: Record<string, unknown>) => {
    deployCalls.push(params);
    return { content: [{ type: "text", text: `deployed to ${String(params.target)}` }], details: {} };
  },
};

describe("playground in a real browser", () => {
  const prefix = uniquePrefix("pgbrowser");
  const profile = mkdtempSync(join(tmpdir(), "threadline-chromium-"));
  let redis: Redis;
  let model: FakeOpenAIServer;
  let worker: WorkerProcess | undefined;
  let gateway: GatewayProcess | undefined;
  let browser: BrowserContext | undefined;
  let url: string;

  beforeAll(async () => {
    redis = connect();
    await requireRedis(redis);
    model = await FakeOpenAIServer.start();
    const port = await freePort();
    url = `http://127.0.0.1:${port}/`;
    const env = parseEnv({
      ...redisEnv(),
      THREADLINE_PREFIX: prefix,
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: "sk-test",
      OPENAI_MODEL: "fake-model",
      PLAYGROUND_PORT: String(port),
      LOG_LEVEL: "silent",
    });
    const log = createLogger(env.LOG_LEVEL);
    const config = runsConfigFromEnv(env);
    const platforms = (role: "gateway" | "worker") => createPlatforms({ env, redis, log, role, config });
    const workerPlatforms = await platforms("worker");
    expect(workerPlatforms.map((platform) => platform.platform)).toEqual(["playground"]);
    worker = await startWorkerProcess({
      env,
      log,
      platforms: workerPlatforms,
      agent: agentSetupFromEnv(env, [lookup, deploy]),
    });
    gateway = await startGatewayProcess({ env, log, platforms: await platforms("gateway") });
    browser = await launchChromium(profile);
  }, 60_000);

  afterAll(async () => {
    // Let anything still waiting finish, so the worker can close.
    lookupGate.resolve();
    streamGate.resolve();
    stopGate.resolve();
    await browser?.close();
    await gateway?.close();
    await worker?.close();
    await model?.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
    rmSync(profile, { recursive: true, force: true });
  }, 60_000);

  it("streams the answer, takes a steer mid-run and runs a tool once Approve is clicked", async () => {
    model.enqueue(
      toolCallReply([{ id: "call_lookup", name: "lookup", arguments: { city: "Paris" } }], {
        text: "Let me check the weather first.",
      }),
      toolCallReply([{ id: "call_deploy", name: "deploy", arguments: { target: "production" } }]),
      // Three chunks (role, "Deploy", "ed to "), then the stream waits until the test has looked.
      { ...textReply(FINAL_ANSWER, { pieceSize: 6 }), pause: { before: 3, until: streamGate.promise } },
    );
    const page = await browser!.newPage();
    page.setDefaultTimeout(20_000);
    const pageErrors: string[] = [];
    page.on("pageerror", (err) => pageErrors.push(err.message));
    try {
      await page.goto(url);
      await page.getByLabel("Your name").fill("Ada");
      await page.getByRole("button", { name: "Start chatting" }).click();

      // Post: the composer mentions the bot; the thread appears with the gateway's 👀 on the message.
      await send(page, "Check the weather in Paris, then deploy.");
      await lookupStarted.promise;
      const first = page.locator(".msg-user", { hasText: "Check the weather in Paris" });
      await first.locator(".mention-tag", { hasText: "@Threadline" }).waitFor();
      await page.locator(".thread-link", { hasText: "Check the weather in Paris" }).waitFor();
      await page.locator(".msg-bot", { hasText: "lookup" }).waitFor();

      // Steer while the tool runs: queued as steer (🧭), then delivered (✅) into the next model request.
      await send(page, "Also include Berlin.");
      const steer = page.locator(".msg-user", { hasText: "Also include Berlin." });
      await steer.locator('.reaction[data-emoji="compass"]').waitFor();
      lookupGate.resolve();
      await steer.locator('.reaction[data-emoji="white_check_mark"]').waitFor();
      await model.waitForRequests(2);
      const second = chatMessages(model, 1);
      expect(second.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool", "user"]);
      expect(second.at(-1)?.content).toContain("Also include Berlin.");

      // Approve: the card waits for the click; the tool runs only after it.
      const approve = page.getByRole("button", { name: "Approve", exact: true });
      await approve.waitFor();
      await page.locator(".card.pending", { hasText: "target: production" }).waitFor();
      await page.screenshot({ path: APPROVAL_SCREENSHOT });
      // "Always allow" names whom it covers; with no approvers configured nobody could grant it to everyone.
      await page.getByRole("button", { name: "Always allow deploy for Ada in this thread" }).waitFor();
      expect(await page.locator(".card.pending [data-decision='alwaysThread']").count()).toBe(0);
      expect(deployCalls).toEqual([]);
      await approve.click();
      await page.locator(".card.approved", { hasText: "Approved by Ada" }).waitFor();
      expect(deployCalls).toEqual([{ target: "production" }]);

      // Streaming: the partial answer is on screen while the model is still sending it.
      await model.waitForRequests(3);
      expect(chatMessages(model, 2).at(-1)).toMatchObject({
        role: "tool",
        content: "deployed to production",
      });
      const answer = page.locator(".msg-bot .text", { hasText: "Deployed to" });
      await answer.waitFor();
      expect(await answer.textContent()).not.toContain("Berlin is cloudy");
      expect(await page.locator("#status").textContent()).toContain("Threadline is thinking");
      streamGate.resolve();
      await page.locator(".msg-bot .text", { hasText: "Berlin is cloudy" }).waitFor();
      await page.locator(".msg-bot strong", { hasText: "production" }).waitFor();
      await page.locator("#status").waitFor({ state: "hidden" });

      expect(pageErrors).toEqual([]);
    } finally {
      await page.mouse.move(700, 20);
      await page.screenshot({ path: SCREENSHOT });
      await page.close();
    }
  }, 90_000);

  it("stops a run when the requester reacts 🛑 on the bot's reply", async () => {
    model.enqueue({
      ...textReply("Once upon a time, in a land far away", { pieceSize: 5 }),
      pause: { before: 3, until: stopGate.promise },
    });
    const page = await browser!.newPage();
    page.setDefaultTimeout(20_000);
    try {
      await page.goto(url);
      await page.getByRole("button", { name: "+ New thread" }).click();
      await send(page, "Tell me a long story.");
      const reply = page.locator(".msg-bot", { hasText: "Once upon" });
      await reply.waitFor();
      await reply.hover();
      await reply.getByRole("button", { name: "React 🛑 stop" }).click();
      await page.locator(".msg-bot", { hasText: "Stopped by Ada" }).waitFor();
      await page.locator("#status").waitFor({ state: "hidden" });
      expect(await reply.textContent()).not.toContain("far away");
      await reply.locator('.reaction[data-emoji="octagonal_sign"].mine').waitFor();
    } finally {
      await page.close();
    }
  }, 60_000);

  it("keeps the events of a thread that arrive while its snapshot loads (the bot's status is not lost)", async () => {
    const store = new PlaygroundStore(redis, { keys: playgroundKeys(prefix) });
    const ana = { id: "u-ana-race", name: "Ana" };
    const threadId = `race-${Date.now()}`;
    const now = Date.now();
    await store.addMessage(
      threadId,
      { id: "m-race-1", kind: "user", author: ana, text: "Hello bot", sentAt: now },
      { thread: { id: threadId, title: "Race thread", createdAt: now, createdBy: ana, lastActivity: now } },
    );
    const page = await browser!.newPage();
    page.setDefaultTimeout(20_000);
    // Every event the page's stream delivers, recorded before the page's own handler sees it.
    await page.addInitScript(`(() => {
      window.__events = [];
      const Native = window.EventSource;
      window.EventSource = class extends Native {
        constructor(...args) {
          super(...args);
          this.addEventListener("message", (message) => window.__events.push(JSON.parse(message.data)));
        }
      };
    })()`);
    // The thread's snapshot is read now, and handed to the page only once the test lets it.
    const fetched = deferred();
    const release = deferred();
    await page.route(`**/api/threads/${threadId}`, async (route) => {
      const response = await route.fetch();
      fetched.resolve();
      await release.promise;
      await route.fulfill({ response });
    });
    try {
      await page.goto(url);
      await page.evaluate("localStorage.clear()");
      await page.reload();
      await page.getByLabel("Your name").fill("Lin");
      await page.getByRole("button", { name: "Start chatting" }).click();
      await page.locator(".thread-link", { hasText: "Race thread" }).click();
      await fetched.promise;
      // The bot starts working after the snapshot was read and before the page has it.
      await store.setStatus(threadId, "is thinking…");
      await page.waitForFunction(
        `window.__events.some((event) => event.type === "status" && event.thread === ${JSON.stringify(threadId)})`,
      );
      release.resolve();
      await page.locator(".msg-user", { hasText: "Hello bot" }).waitFor();
      await expect.poll(() => page.locator("#status-text").textContent()).toBe("Threadline is thinking…");

      // Its first post while it streams is not read out half-written; the settled answer is.
      await store.addMessage(threadId, {
        id: "m-race-2",
        kind: "bot",
        author: PLAYGROUND_BOT,
        text: "Half an ans",
        sentAt: Date.now(),
      });
      await page.locator(".msg-bot", { hasText: "Half an ans" }).waitFor();
      const live = page.locator("#announcer");
      expect(await live.textContent()).not.toContain("Half an ans");
      await store.editText(threadId, "m-race-2", "Half an answer, now whole.", { kinds: ["bot"] });
      await store.setStatus(threadId, null);
      await expect.poll(() => live.textContent()).toContain("Threadline: Half an answer, now whole.");
    } finally {
      await page.close();
    }
  }, 60_000);

  it("meets WCAG 2.2 AA (axe-core) in light and dark mode, announces new messages, and reaches a card by keyboard", async () => {
    model.enqueue(
      textReply("Hello! Read the [docs](https://example.com/docs) or ask me to deploy."),
      toolCallReply([{ id: "call_deploy_a11y", name: "deploy", arguments: { target: "staging" } }]),
      textReply("Deployed to staging."),
    );
    const page = await browser!.newPage();
    page.setDefaultTimeout(20_000);
    const found: Record<string, string[]> = {};
    const audit = async (view: string) => {
      for (const colorScheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme });
        found[`${view} (${colorScheme})`] = await seriousViolations(page);
      }
      await page.emulateMedia({ colorScheme: "light" });
    };
    try {
      await page.goto(url);
      await page.evaluate("localStorage.clear()");
      await page.reload();
      await page.getByLabel("Your name").waitFor();
      await audit("welcome dialog");
      await page.getByLabel("Your name").fill("Grace");
      await page.getByRole("button", { name: "Start chatting" }).click();
      await page.locator("#empty").waitFor();
      await audit("home, with the thread list");

      // A finished answer: announced through the live region; its footer is small secondary text.
      await send(page, "Hello there");
      const footer = page.locator(".msg-bot .text .subtext", { hasText: "1 turn" });
      await footer.waitFor();
      await page.locator("#status").waitFor({ state: "hidden" });
      const live = page.locator("#announcer");
      expect(await live.getAttribute("aria-live")).toBe("polite");
      await expect
        .poll(() => live.textContent())
        .toContain("Threadline: Hello! Read the docs or ask me to deploy.");
      // (Page functions as strings: the test project's TypeScript has no DOM library.)
      const sizes = (await page.evaluate(`(() => {
        const subtext = [...document.querySelectorAll(".msg-bot .text .subtext")].at(-1);
        const size = (element) => Number.parseFloat(getComputedStyle(element).fontSize);
        return { answer: size(subtext.closest(".text").querySelector("p:not(.subtext)")), footer: size(subtext) };
      })()`)) as { answer: number; footer: number };
      expect(sizes.footer).toBeLessThan(sizes.answer);

      // A pending approval card: announced, and reached from the sidebar in a few Tab presses (the toolbars
      // of earlier messages are not in the way).
      await send(page, "Deploy to staging please.");
      const approve = page.getByRole("button", { name: "Approve", exact: true });
      await approve.waitFor();
      await expect.poll(() => live.textContent()).toContain("Threadline asks for approval to run deploy");
      await audit("thread with an answer and a pending approval card");
      await page.locator("#rename").focus();
      let presses = 0;
      const onApprove = "document.activeElement?.matches('.card.pending .approve') === true";
      while (!(await page.evaluate(onApprove)) && presses < 40) {
        await page.keyboard.press("Tab");
        presses++;
      }
      expect(presses).toBeLessThanOrEqual(3);
      await page.keyboard.press("Enter");
      await page.locator(".card.approved", { hasText: "Approved by Grace" }).waitFor();
      await page.locator(".msg-bot .text", { hasText: "Deployed to staging." }).waitFor();
      await page.locator("#status").waitFor({ state: "hidden" });
      await audit("thread after the decision");

      // The message list is one Tab stop; arrow keys move between messages and into a message's toolbar.
      const last = page.locator(".msg").last();
      await last.focus();
      await page.keyboard.press("ArrowUp");
      expect(
        await page.evaluate("document.activeElement === [...document.querySelectorAll('.msg')].at(-2)"),
      ).toBe(true);
      expect(await page.locator(".msg[tabindex='0']").count()).toBe(1);
      await page.setViewportSize({ width: 390, height: 800 });
      await page.getByRole("button", { name: "Threads" }).click();
      await audit("phone, thread drawer open");
      expect(found).toEqual(Object.fromEntries(Object.keys(found).map((view) => [view, []])));
    } finally {
      await page.close();
    }
  }, 90_000);
});

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel("Message", { exact: true }).fill(text);
  await page.keyboard.press("Enter");
  await page.locator(".msg-user", { hasText: text }).waitFor();
}

/** The chat messages of the `index`-th (0-based) model request, contents flattened to text. */
function chatMessages(model: FakeOpenAIServer, index: number): { role: string; content: string }[] {
  const chats = model.requests.filter((request) => request.path === "/chat/completions");
  const body = chats[index]?.body as { messages: { role: string; content: unknown }[] } | undefined;
  if (!body) throw new Error(`no model request ${index}`);
  return body.messages.map((message) => ({
    role: message.role,
    content:
      typeof message.content === "string"
        ? message.content
        : Array.isArray(message.content)
          ? message.content.map((part: { text?: string }) => part.text ?? "").join("")
          : "",
  }));
}
