import { threadId as encodeThreadId } from "../../src/chat/index.js";
import type { PlaygroundSnapshot } from "../../src/playground/index.js";
import { playgroundThread } from "../../src/playground/index.js";
import { threadKeys } from "../../src/runs/keys.js";
import { FakeOpenAIServer } from "../fakes/openai-server.js";
import { EventStream } from "../playground/helpers.js";
import { freePort } from "./net.js";
import { CliProcess } from "./process.js";
import { redisEnv, requireRedis } from "./redis.js";
import { ScriptedE2E } from "./scripted-e2e.js";

/**
 * `threadline start` (gateway and worker in one process, the playground as its chat) on a free port, with
 * the test tools module, a fake chat-completions server and a real Redis, and a live event stream opened
 * as a browser would. Model replies are scripted per test tag ({@link ScriptedE2E}: the thread's first
 * message carries `[tN]`); a test may set `openai.handler` itself instead.
 */
export class PlaygroundE2E extends ScriptedE2E {
  bot!: CliProcess;
  url!: string;
  events!: EventStream;

  private constructor(openai: FakeOpenAIServer, prefixName: string) {
    super(openai, prefixName);
  }

  /** Starts the process with `env` added to the playground's; resolves once the playground is open. */
  static async start(prefixName: string, env: Record<string, string> = {}): Promise<PlaygroundE2E> {
    const e2e = new PlaygroundE2E(await FakeOpenAIServer.start(), prefixName);
    await requireRedis(e2e.redis);
    const port = await freePort();
    e2e.url = `http://127.0.0.1:${port}`;
    e2e.bot = await CliProcess.start(
      "start",
      {
        ...redisEnv(),
        THREADLINE_PREFIX: e2e.prefix,
        PLAYGROUND_PORT: String(port),
        OPS_PORT: "0",
        OPENAI_BASE_URL: e2e.openai.baseURL,
        OPENAI_API_KEY: "sk-test",
        OPENAI_MODEL: "fake-model",
        OPENAI_CONTEXT_WINDOW: "32000",
        THREADLINE_TOOLS_MODULE: "test/fakes/slack-tools.ts",
        LOG_LEVEL: "info",
        ...env,
      },
      "playground: open",
      60_000,
    );
    e2e.events = await EventStream.open(`${e2e.url}/api/events`);
    return e2e;
  }

  /** POSTs JSON the way the page does; the body is `{}` when the answer is not JSON. */
  async post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${this.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json().catch(() => ({}))) as Record<string, unknown>,
    };
  }

  /** What the page loads for a thread. */
  async snapshot(threadId: string): Promise<PlaygroundSnapshot> {
    return (await (await fetch(`${this.url}/api/threads/${threadId}`)).json()) as PlaygroundSnapshot;
  }

  /** The Redis keys of a playground thread. */
  keys(threadId: string) {
    return threadKeys(this.prefix, encodeThreadId(playgroundThread(threadId)));
  }

  /** Resolves once the live events told of `count` runs of the thread that ended (its status cleared). */
  finished(threadId: string, count = 1): Promise<void> {
    return this.events.waitFor(
      (received) =>
        received.filter(
          (event) => event.type === "status" && event.thread === threadId && event.status === null,
        ).length >= count,
    );
  }

  async close(): Promise<void> {
    this.events?.close();
    await this.bot?.stop();
    await this.closeShared();
  }
}
