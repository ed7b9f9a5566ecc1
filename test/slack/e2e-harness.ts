import { FakeOpenAIServer } from "../fakes/openai-server.js";
import { type FakeMessage, type FakeSlackOptions, FakeSlackServer } from "../fakes/slack-server.js";
import { freePort } from "../support/net.js";
import { CliProcess } from "../support/process.js";
import { redisEnv, requireRedis } from "../support/redis.js";
import { ScriptedE2E } from "../support/scripted-e2e.js";

export const ALICE = "U0ALICE";
export const BOB = "U0BOB";
export const CAROL = "U0CAROL";

export type { ModelStep } from "../support/scripted-e2e.js";

/** Options of {@link SlackE2E.start}. */
export interface SlackE2EOptions {
  mode?: "socket" | "http";
  slack?: FakeSlackOptions;
  /** Extra environment for both processes. */
  env?: Record<string, string>;
}

/**
 * A fake Slack and a fake model, with the real `threadline gateway` and `threadline worker` running as
 * separate processes against them and a real Redis. Model replies are scripted per test tag
 * ({@link ScriptedE2E}): every mention carries `[tN]`.
 */
export class SlackE2E extends ScriptedE2E {
  readonly channel = "C0GENERAL";
  gateway!: CliProcess;
  worker!: CliProcess;

  private constructor(
    readonly slack: FakeSlackServer,
    openai: FakeOpenAIServer,
    private readonly env: Record<string, string>,
  ) {
    super(openai, "slack");
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

  async close(): Promise<void> {
    await Promise.all([this.gateway?.stop(), this.worker?.stop()]);
    await this.slack.close();
    await this.closeShared();
  }
}

export { gate } from "../support/async.js";
export { userTexts } from "../support/model-requests.js";
