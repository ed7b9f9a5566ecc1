import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDoctor } from "../../src/app/doctor.js";
import { parseEnv } from "../../src/app/env.js";
import type { PlaygroundMessage, PlaygroundSnapshot, PlaygroundThread } from "../../src/playground/index.js";
import { queuePrefix, threadKeys } from "../../src/runs/index.js";
import { FakeOpenAIServer, type ReceivedRequest, textReply, toolCallReply } from "../fakes/openai-server.js";
import { toolResults, userTexts } from "../support/model-requests.js";
import { freePort } from "../support/net.js";
import { CliProcess } from "../support/process.js";
import { uniquePrefix } from "../support/redis.js";
import { TestCluster } from "./redis-cluster.js";

const ada = { id: "u-ada", name: "Ada" };

/** The model: a deploy request asks for the `deploy` tool; once its result is in, it answers in text. */
function answer(request: ReceivedRequest) {
  const users = userTexts(request);
  if (toolResults(request).length > 0) return textReply(`Done: ${toolResults(request).join("; ")}`);
  if ((users[0] ?? "").includes("deploy web"))
    return toolCallReply([{ name: "deploy", arguments: { service: "web" } }]);
  return textReply(`Hello from the cluster (${users.length} message${users.length === 1 ? "" : "s"})`);
}

describe("gateway and worker on a real three-master Redis Cluster (REDIS_CLUSTER_NODES)", () => {
  const prefix = uniquePrefix("cluster");
  let cluster: TestCluster | undefined;
  let model: FakeOpenAIServer | undefined;
  let processes: CliProcess[] = [];
  let url = "";

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
    model = await FakeOpenAIServer.start();
    model.handler = answer;
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    // No REDIS_URL: every connection the processes open must go to the cluster.
    const env = {
      REDIS_CLUSTER_NODES: cluster.nodes,
      THREADLINE_PREFIX: prefix,
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_MODEL: "fake-model",
      THREADLINE_TOOLS_MODULE: "test/fakes/slack-tools.ts",
      PLAYGROUND_PORT: String(port),
      OPS_PORT: "0",
      LOG_LEVEL: "info",
    };
    processes = await CliProcess.startAll([
      CliProcess.start("worker", env, "worker started", 30_000),
      CliProcess.start("gateway", env, "playground: open", 30_000),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((process) => process.stop()));
    await model?.close();
    await cluster?.stop();
  }, 30_000);

  async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.headers = { "content-type": "application/json" };
      init.body = JSON.stringify(body);
    }
    const response = await fetch(`${url}${path}`, init);
    const json = (await response.json()) as T;
    if (!response.ok)
      throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
    return json;
  }

  /** Polls the thread until `done(snapshot)` holds (bounded by the test timeout). */
  async function until(threadId: string, done: (snapshot: PlaygroundSnapshot) => boolean) {
    for (;;) {
      const snapshot = await api<PlaygroundSnapshot>("GET", `/api/threads/${threadId}`);
      if (done(snapshot)) return snapshot;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const bot = (snapshot: PlaygroundSnapshot) => snapshot.messages.filter((message) => message.kind === "bot");
  const reactions = (message: PlaygroundMessage | undefined) =>
    (message?.reactions ?? []).map((reaction) => reaction.emoji);

  it("answers a mention, waits on an approval card, takes a steer reply, and keeps the thread in the cluster", async () => {
    const { thread } = await api<{ thread: PlaygroundThread }>("POST", "/api/threads", {
      user: ada,
      text: "@Threadline deploy web",
    });
    const waiting = await until(thread.id, (snapshot) =>
      snapshot.messages.some((message) => message.kind === "approval" && message.card !== undefined),
    );
    const card = waiting.messages.find((message) => message.kind === "approval")!.card!;
    expect(card.toolName).toBe("deploy");

    // A reply while the card waits is queued as steer (🧭) and reaches the model after the tool batch.
    const { message: steer } = await api<{ message: PlaygroundMessage }>(
      "POST",
      `/api/threads/${thread.id}/messages`,
      { user: ada, text: "and check the logs" },
    );
    await until(thread.id, (snapshot) =>
      reactions(snapshot.messages.find((message) => message.id === steer.id)).includes("compass"),
    );
    await api("POST", `/api/threads/${thread.id}/approvals/${card.approvalId}`, {
      user: ada,
      decision: "approve",
    });
    const done = await until(thread.id, (snapshot) =>
      bot(snapshot).some((message) => message.text.includes("Done: deployed web")),
    );

    // What the model saw after the approval: the tool's result and the steer, author-prefixed.
    const chat = model!.requests.filter((request) => request.path === "/chat/completions");
    const last = chat.at(-1);
    expect(toolResults(last)).toEqual(["deployed web"]);
    expect(userTexts(last).at(-1)).toContain("and check the logs");
    expect(reactions(done.messages.find((message) => message.id === steer.id))).toContain("white_check_mark");

    // The run's state lives in the cluster: the transcript, and the run queue under its hash-tagged prefix.
    const client = cluster!.client();
    try {
      const transcript = await client.lrange(
        threadKeys(prefix, `playground:local:playground:${thread.id}`).transcript,
        0,
        -1,
      );
      const roles = transcript.map((json) => (JSON.parse(json) as { role: string }).role);
      expect(roles).toEqual(["user", "assistant", "toolResult", "user", "assistant"]);
      expect(await client.exists(`${queuePrefix(prefix)}:runs:meta`)).toBe(1);
    } finally {
      client.disconnect();
    }
  }, 30_000);

  it("lists threads whose keys live on different cluster nodes", async () => {
    const client = cluster!.client();
    const created: string[] = [];
    try {
      // Until two threads' playground keys are served by different masters (a third of pairs share one).
      const owners = new Set<string>();
      while (owners.size < 2) {
        const { thread } = await api<{ thread: PlaygroundThread }>("POST", "/api/threads", {
          user: ada,
          text: `@Threadline hello ${created.length}`,
        });
        created.push(thread.id);
        const slot = (await client.cluster(
          "KEYSLOT",
          `${prefix}:playground:{pg:${thread.id}}:meta`,
        )) as number;
        owners.add(ownerOf(await client.cluster("SLOTS"), slot));
      }
      for (const id of created) {
        await until(id, (snapshot) =>
          bot(snapshot).some((message) => message.text.includes("Hello from the cluster")),
        );
      }
    } finally {
      client.disconnect();
    }
    const { threads } = await api<{ threads: PlaygroundThread[] }>("GET", "/api/threads");
    expect(threads.map((thread) => thread.id)).toEqual(expect.arrayContaining(created));
  }, 30_000);
});

describe("doctor and a Redis Cluster", () => {
  let cluster: TestCluster | undefined;
  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  }, 30_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("checks REDIS_CLUSTER_NODES, and says so when REDIS_URL points at one node of a cluster", async () => {
    const redisCheck = async (env: Record<string, string>) =>
      (await runDoctor(parseEnv(env))).find((check) => check.name === "Redis");
    expect(await redisCheck({ REDIS_CLUSTER_NODES: cluster!.nodes.split(",")[0]! })).toEqual({
      name: "Redis",
      ok: true,
      detail: `cluster ${cluster!.nodes.split(",")[0]} answers: 3 primaries, every slot served`,
    });
    const host = `127.0.0.1:${cluster!.ports[1]}`;
    expect(await redisCheck({ REDIS_URL: `redis://${host}` })).toEqual({
      name: "Redis",
      ok: false,
      detail: `REDIS_URL points at ${host}, a node of a Redis Cluster: commands for keys on other nodes would fail with MOVED`,
      fix: `Set REDIS_CLUSTER_NODES=${host} (more nodes, comma-separated, if you like) instead of REDIS_URL.`,
    });
  }, 15_000);
});

/** The `host:port` of the master serving `slot`, from a `CLUSTER SLOTS` reply. */
function ownerOf(slots: unknown, slot: number): string {
  for (const range of slots as [number, number, [string, number]][]) {
    if (slot >= range[0] && slot <= range[1]) return `${range[2][0]}:${range[2][1]}`;
  }
  throw new Error(`no node serves slot ${slot}`);
}
