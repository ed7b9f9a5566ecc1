import type { Redis } from "ioredis";
import { FakeOpenAIServer, type FakeReply, type ReceivedRequest } from "../fakes/openai-server.js";
import { type FakeMessage, type FakeSlackOptions, FakeSlackServer } from "../fakes/slack-server.js";
import { conversationTag } from "../support/model-requests.js";
import { freePort } from "../support/net.js";
import { CliProcess } from "../support/process.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";

export const ALICE = "U0ALICE";
export const BOB = "U0BOB";
export const CAROL = "U0CAROL";

/** One scripted model answer, or a function producing it (may wait, e.g. until the test releases it). */
export type ModelStep = FakeReply | ((request: ReceivedRequest) => FakeReply | Promise<FakeReply>);

/** Options of {@link SlackE2E.start}. */
export interface SlackE2EOptions {
  mode?: "socket" | "http";
  slack?: FakeSlackOptions;
  /** Extra environment for both processes. */
  env?: Record<string, string>;
}

/**
 * A fake Slack and a fake model, with the real `threadline gateway` and `threadline worker` running as
 * separate processes against them and a real Redis. Model replies are scripted per test tag: every
 * mention carries `[tN]`, and requests whose first user message has that tag take the tag's next step.
 */
export class SlackE2E {
  readonly prefix = uniquePrefix("slack");
  readonly redis: Redis = connect();
  readonly channel = "C0GENERAL";
  gateway!: CliProcess;
  worker!: CliProcess;
  private readonly scripts = new Map<string, ModelStep[]>();
  private tagSeq = 0;

  private constructor(
    readonly slack: FakeSlackServer,
    readonly openai: FakeOpenAIServer,
    private readonly env: Record<string, string>,
  ) {
    openai.handler = (request) => this.answer(request);
  }

  static async start(options: SlackE2EOptions = {}): Promise<SlackE2E> {
    const slack = await FakeSlackServer.start({ signingSecret: "test-signing-secret", ...options.slack });
    slack.addUser(ALICE, "Alice");
    slack.addUser(BOB, "Bob");
    slack.addUser(CAROL, "Carol");
    const openai = await FakeOpenAIServer.start();
    const mode = options.mode ?? "socket";
    const port = mode === "http" ? await freePort() : 0;
    const e2e = new SlackE2E(slack, openai, {});
    await requireRedis(e2e.redis);
    Object.assign(e2e.env, {
      SLACK_BOT_TOKEN: slack.config.botToken,
      SLACK_APP_TOKEN: mode === "socket" ? slack.config.appToken : "",
      SLACK_SIGNING_SECRET: mode === "http" ? "test-signing-secret" : "",
      SLACK_API_URL: slack.apiUrl,
      PORT: String(port || 3000),
      DISCORD_TOKEN: "",
      ...redisEnv(),
      THREADLINE_PREFIX: e2e.prefix,
      OPENAI_BASE_URL: openai.baseURL,
      OPENAI_API_KEY: "sk-test",
      OPENAI_MODEL: "fake-model",
      THREADLINE_TOOLS_MODULE: "test/fakes/slack-tools.ts",
      LOG_LEVEL: "info",
      ...options.env,
    });
    if (mode === "http") slack.delivery.httpUrl = `http://127.0.0.1:${port}/slack/events`;
    [e2e.worker, e2e.gateway] = (await CliProcess.startAll([
      CliProcess.start("worker", e2e.env, "worker started"),
      CliProcess.start("gateway", e2e.env, "gateway receiving events"),
    ])) as [CliProcess, CliProcess];
    return e2e;
  }

  /** A fresh tag for one test's conversation, with its model script. */
  tag(...steps: ModelStep[]): string {
    const tag = `t${++this.tagSeq}`;
    this.scripts.set(tag, steps);
    return tag;
  }

  /** Alice (or `user`) mentions the bot at the top of the channel (or in `threadTs`). */
  mention(tag: string, text: string, options: { user?: string; threadTs?: string; channel?: string } = {}) {
    return this.slack.post({
      user: options.user ?? ALICE,
      channel: options.channel ?? this.channel,
      text: `<@${this.slack.config.botUserId}> [${tag}] ${text}`,
      ...(options.threadTs !== undefined ? { threadTs: options.threadTs } : {}),
    });
  }

  /** A reply in the thread of `root`. */
  reply(root: FakeMessage, text: string, user = ALICE): FakeMessage {
    return this.slack.post({ user, channel: root.channel, text, threadTs: root.threadTs ?? root.ts });
  }

  /** The bot's messages in the thread of `root`, oldest first. */
  botMessages(root: FakeMessage): FakeMessage[] {
    return this.slack.store.botMessages(root.channel, root.threadTs ?? root.ts, this.slack.config.botUserId);
  }

  /**
   * What a person reads in a bot message: its text, and the task cards a native stream shows (`task_update`
   * chunks: title, status, details, output), one line each.
   */
  static visibleText(message: FakeMessage): string {
    const tasks = [...(message.tasks?.values() ?? [])].map((task) =>
      ["🔧", task.title, task.status, task.details, task.output]
        .filter((part) => part !== undefined)
        .join(" "),
    );
    return [message.text, ...tasks].join("\n");
  }

  /** Everything the bot shows in the thread of `root`, oldest message first. */
  visibleTexts(root: FakeMessage): string[] {
    return this.botMessages(root).map((message) => SlackE2E.visibleText(message));
  }

  /** Resolves with the bot message of the thread whose visible text contains `text`. */
  waitForText(root: FakeMessage, text: string, timeoutMs?: number): Promise<FakeMessage> {
    return this.slack.store.waitFor(
      `bot text "${text}"`,
      () => this.botMessages(root).find((message) => SlackE2E.visibleText(message).includes(text)),
      timeoutMs,
    );
  }

  /** Resolves once the bot has reaction `name` on `message`. */
  waitForReaction(message: FakeMessage, name: string, timeoutMs?: number): Promise<true> {
    return this.slack.store.waitFor(
      `bot reaction ${name} on ${message.ts}`,
      () => this.slack.store.reactionsBy(message, this.slack.config.botUserId).includes(name) || undefined,
      timeoutMs,
    );
  }

  /** The bot's reactions on a message. */
  reactions(message: FakeMessage): string[] {
    return this.slack.store.reactionsBy(message, this.slack.config.botUserId).sort();
  }

  /** Resolves once `count` runs in the thread of `root` have ended (each clears the thread status last). */
  waitForRunsEnded(root: FakeMessage, count = 1, timeoutMs?: number): Promise<true> {
    const threadTs = root.threadTs ?? root.ts;
    return this.slack.store.waitFor(
      `${count} finished run(s) in ${threadTs}`,
      () =>
        this.slack.store.statuses.filter((s) => s.threadTs === threadTs && s.status === "").length >= count ||
        undefined,
      timeoutMs,
    );
  }

  /** Polls `check` every 20 ms until it is true; rejects after `timeoutMs` naming `what`. */
  async until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** The chat-completion requests of a tag's conversation, in arrival order. */
  requests(tag: string): ReceivedRequest[] {
    return this.openai.requests.filter((request) => conversationTag(request) === tag);
  }

  async close(): Promise<void> {
    await Promise.all([this.gateway?.stop(), this.worker?.stop()]);
    await this.slack.close();
    await this.openai.close();
    await deletePrefix(this.redis, this.prefix);
    this.redis.disconnect();
  }

  private async answer(request: ReceivedRequest): Promise<FakeReply | undefined> {
    if (request.path !== "/chat/completions") return undefined;
    const tag = conversationTag(request);
    const step = tag === undefined ? undefined : this.scripts.get(tag)?.shift();
    if (step === undefined) {
      return { kind: "error", status: 500, message: `no scripted reply for ${tag ?? "an untagged request"}` };
    }
    return typeof step === "function" ? step(request) : step;
  }
}

export { gate } from "../support/async.js";
export { userTexts } from "../support/model-requests.js";
