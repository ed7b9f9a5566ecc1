import { Redis } from "ioredis";
import { contextWindowFor, formatLimit, type ProbeOptions, providerFor } from "../llm/index.js";
import { providerEnv } from "./agent-config.js";
import { redisServerVersion } from "./embedded-redis.js";
import type { Env } from "./env.js";
import { CHAT_PLATFORMS, type ChatPlatformModule } from "./platforms.js";
import { checkRedisCluster, clusterNodeAtUrl, within } from "./redis-check.js";

/** One line of the doctor's report. */
export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** What was found, in words. */
  detail: string;
  /** What to do about it (failed checks). */
  fix?: string;
  /** Checks that do not apply (e.g. no Discord token) are skipped, not failed. */
  skipped?: boolean;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function checkRedis(env: Env): Promise<DoctorCheck> {
  if (env.REDIS_CLUSTER_NODES) return checkRedisCluster(env.REDIS_CLUSTER_NODES);
  const url = env.REDIS_URL;
  if (!url) {
    // What `start` will need: a redis-server binary to run privately.
    const version = await redisServerVersion();
    return version
      ? {
          name: "Redis",
          ok: true,
          detail: `REDIS_URL is not set: \`npm start\` runs a private redis-server (${version}); separate gateway and worker processes need REDIS_URL`,
        }
      : {
          name: "Redis",
          ok: false,
          detail:
            "REDIS_URL is not set and no redis-server is installed, so `npm start` cannot run a private one",
          fix: "Install Redis (Debian/Ubuntu: sudo apt-get install redis-server · macOS: brew install redis), or set REDIS_URL=redis://<host>:6379.",
        };
  }
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on("error", () => {});
  try {
    await within(redis.connect().then(() => redis.ping()));
    const clustered = await clusterNodeAtUrl(redis, url);
    if (clustered) return clustered;
    return { name: "Redis", ok: true, detail: `answers at ${new URL(url).host}` };
  } catch (err) {
    return {
      name: "Redis",
      ok: false,
      detail: `no answer at ${new URL(url).host}: ${message(err)}`,
      fix: "Start Redis (e.g. `redis-server`) or fix REDIS_URL.",
    };
  } finally {
    redis.disconnect();
  }
}

/** The active provider's endpoint check, with the settings in use (the provider's variables; no config module). */
async function checkModel(env: Env): Promise<DoctorCheck> {
  const { module, settings: vars } = providerEnv(env);
  const names = module.variables;
  if (vars.apiKey === undefined && vars.baseURL === undefined) {
    return { name: "Model", ok: false, detail: "no model is configured", fix: `${module.setupHint}.` };
  }
  const options: ProbeOptions = {
    baseURL: vars.baseURL ?? module.defaultBaseURL,
    model: vars.model,
    apiKeyHint: names.apiKey,
  };
  if (vars.apiKey) options.apiKey = vars.apiKey;
  const model = module.model({ id: vars.model });
  let probe: NonNullable<ReturnType<typeof providerFor>["probe"]> | undefined;
  try {
    probe = providerFor(model).probe;
  } catch (err) {
    return {
      name: "Model",
      ok: false,
      detail: message(err),
      fix: "Register a provider for this model's api.",
    };
  }
  if (!probe) {
    return {
      name: "Model",
      ok: true,
      skipped: true,
      detail: `the ${model.api} provider has no endpoint check`,
    };
  }
  const result = await probe(options);
  const known = (module.contextWindow ?? contextWindowFor)(vars.model, vars.contextWindow);
  const served = result.ok ? result.contextWindow : undefined;
  const window =
    known.source === "configured"
      ? `${Math.min(known.tokens, served ?? known.tokens)} tokens (configured${served !== undefined ? `; the server reports ${served}` : ""})`
      : served !== undefined
        ? `${served} tokens (reported by the server)`
        : `${known.tokens} tokens (${known.source === "known" ? "known for this model" : `default; set ${names.contextWindow}`})`;
  const settings = `model ${vars.model} at ${options.baseURL}; context window ${window}; header timeout ${formatLimit(vars.headerTimeoutMs)}, idle timeout ${vars.idleTimeoutMs === 0 ? "off" : formatLimit(vars.idleTimeoutMs)}`;
  const unlisted =
    result.ok && result.via === "chat" && result.models
      ? ` Warning: "${vars.model}" is not in the server's model list (${result.models.slice(0, 8).join(", ")}).`
      : "";
  return result.ok
    ? { name: "Model", ok: true, detail: `${result.verdict}${unlisted} Using ${settings}.` }
    : {
        name: "Model",
        ok: false,
        detail: result.verdict,
        fix: `Check ${names.baseURL}, ${names.model} and ${names.apiKey}.`,
      };
}

/** Each chat platform's own check, in table order; one that is not configured is skipped. */
function checkPlatforms(env: Env): Promise<DoctorCheck>[] {
  const modules: readonly ChatPlatformModule[] = CHAT_PLATFORMS;
  return modules.flatMap((platform) => {
    if (!platform.check) return [];
    if (!platform.configured(env)) {
      const wanted = platform.credentials ? ` (${platform.credentials})` : "";
      return [
        Promise.resolve({ name: platform.title, ok: true, skipped: true, detail: `not configured${wanted}` }),
      ];
    }
    return [platform.check(env)];
  });
}

/** Runs every check (in parallel); never throws. */
export async function runDoctor(env: Env): Promise<DoctorCheck[]> {
  return Promise.all([checkRedis(env), checkModel(env), ...checkPlatforms(env)]);
}

/** The report as text: one line per check, with the fix under failed ones. */
export function formatDoctorReport(checks: DoctorCheck[]): string {
  const lines = checks.map((check) => {
    const mark = check.skipped ? "–" : check.ok ? "✓" : "✗";
    const head = `${mark} ${check.name}: ${check.detail}`;
    return check.fix && !check.ok ? `${head}\n    → ${check.fix}` : head;
  });
  const failed = checks.filter((check) => !check.ok).length;
  lines.push(
    failed === 0
      ? "\nEverything needed is in place."
      : `\n${failed} problem${failed === 1 ? "" : "s"} to fix.`,
  );
  return lines.join("\n");
}
