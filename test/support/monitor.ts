import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { ScriptSpec } from "../../src/runs/scripts.js";
import { serversOf } from "./redis.js";

/**
 * MONITOR on every server of `redis` (as test/slack/ack-first.test.ts does: a `duplicate({ monitor: true })`
 * connection, lines before "monitoring" ignored): the commands clients sent and, apart, the commands scripts
 * ran inside Redis, each as its arguments.
 */
export async function monitorRedis(redis: Redis) {
  const sent: string[][] = [];
  const inScripts: string[][] = [];
  const monitors = await Promise.all(
    serversOf(redis).map(async (server) => {
      const monitor = server.duplicate({ monitor: true, lazyConnect: false });
      monitor.on("error", () => {});
      await new Promise<void>((resolve) => monitor.once("monitoring", () => resolve()));
      monitor.on("monitor", (_time: string, args: string[], source: string) => {
        (source === "lua" ? inScripts : sent).push(args);
      });
      return monitor;
    }),
  );
  return {
    sent,
    inScripts,
    /** Resolves once every command Redis ran before this call has been seen here. */
    async flush(): Promise<void> {
      const sentinel = `monitor-sentinel:${Math.random()}`;
      const servers = serversOf(redis);
      await Promise.all(servers.map((server) => server.echo(sentinel)));
      while (sent.filter((args) => args.includes(sentinel)).length < servers.length) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    stop: () => Promise.all(monitors.map((monitor) => monitor.disconnect())),
  };
}

/** How many of `commands` call `script` (EVALSHA by its digest, or EVAL of its text, which starts with its name) on keys under `prefix`. */
export function scriptCalls(commands: string[][], script: ScriptSpec, prefix: string): number {
  const sha = createHash("sha1").update(script.lua).digest("hex");
  return commands.filter(([name = "", body, , firstKey = ""]) => {
    const command = name.toLowerCase();
    const matches =
      (command === "evalsha" && body === sha) ||
      (command === "eval" && body?.startsWith(`-- ${script.name}\\n`));
    return matches && firstKey.startsWith(`${prefix}:`);
  }).length;
}
