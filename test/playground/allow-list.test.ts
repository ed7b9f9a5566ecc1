import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANNEL_REFUSED_NOTICE } from "../../src/app/access.js";
import { parseEnv } from "../../src/app/env.js";
import { type GatewayProcess, startGatewayProcess } from "../../src/app/gateway.js";
import { createPlatforms } from "../../src/app/platforms.js";
import { runsConfigFromEnv } from "../../src/app/runs-config.js";
import type { ChatUser } from "../../src/chat/index.js";
import type { PlaygroundSnapshot } from "../../src/playground/index.js";
import type { RunLogger } from "../../src/runs/index.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";
import { EventStream, freePort } from "./helpers.js";

const ada: ChatUser = { id: "u-ada", name: "Ada" };

/** The README's config example with its `allow` line uncommented: the playground's channel is not listed. */
describe("playground behind an allow list that does not name it", () => {
  const prefix = uniquePrefix("pgallow");
  const logged: string[] = [];
  const log: RunLogger = {
    info: (fields, message) => void logged.push(`${message} ${JSON.stringify(fields)}`),
    warn: () => {},
    error: () => {},
  };
  let redis: Redis;
  let gateway: GatewayProcess | undefined;
  let url: string;

  beforeAll(async () => {
    redis = connect();
    await requireRedis(redis);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const env = parseEnv({
      ...redisEnv(),
      THREADLINE_PREFIX: prefix,
      PLAYGROUND_PORT: String(port),
      LOG_LEVEL: "silent",
    });
    const config = { allow: { channels: ["C0123456789"] } };
    const platforms = await createPlatforms({
      env,
      redis,
      log,
      role: "gateway",
      config: runsConfigFromEnv(env, config),
    });
    gateway = await startGatewayProcess({ env, log, platforms, config, redis });
  });

  afterAll(async () => {
    await gateway?.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it("tells the author privately and logs the refusal instead of staying silent", async () => {
    const events = await EventStream.open(`${url}/api/events?user=${ada.id}`);
    try {
      const response = await fetch(`${url}/api/threads`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ user: ada, text: "@Threadline hello?" }),
      });
      const { thread } = (await response.json()) as { thread: { id: string } };
      await events.waitFor((received) => received.some((event) => event.type === "notice"));
      expect(events.received.find((event) => event.type === "notice")).toEqual({
        type: "notice",
        thread: thread.id,
        userId: ada.id,
        text: CHANNEL_REFUSED_NOTICE,
      });
      expect(logged).toContainEqual(
        expect.stringMatching(/^message refused by the allow list .*"allow\.channels"/),
      );
      // Nothing started: no 👀 on the message, no reply.
      const snapshot = (await (await fetch(`${url}/api/threads/${thread.id}`)).json()) as PlaygroundSnapshot;
      expect(snapshot.messages.map((message) => [message.kind, message.reactions])).toEqual([["user", []]]);
    } finally {
      events.close();
    }
  });
});
