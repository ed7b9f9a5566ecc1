import { execFile } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

const run = promisify(execFile);
const ROOT = new URL("../../", import.meta.url).pathname;

/** `docker compose` (the v2 plugin) when present, else Debian's `docker-compose`; neither → a clear error. */
async function composeCommand(): Promise<string[]> {
  for (const command of [["docker", "compose"], ["docker-compose"]]) {
    try {
      await run(command[0]!, [...command.slice(1), "version"]);
      return command;
    } catch {
      // try the next one
    }
  }
  throw new Error(
    "neither `docker compose` nor `docker-compose` is installed: install the Docker Compose plugin or Debian's docker-compose package (.ci/run does)",
  );
}

interface ComposeService {
  command?: string[];
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  environment?: Record<string, string>;
  ports?: (string | { target: number; published: string | number; host_ip?: string })[];
  healthcheck?: { test: string[] };
  volumes?: (string | { source: string; target: string })[];
}

/** The compose file as a user runs it: next to the Dockerfile, with `.env` copied from `.env.example`. */
describe("docker-compose.yml (validated by Docker Compose's own `config`)", () => {
  let dir: string;
  let compose: string[];
  let services: Record<string, ComposeService>;

  beforeAll(async () => {
    compose = await composeCommand();
    dir = await mkdtemp(join(tmpdir(), "threadline-compose-"));
    await copyFile(join(ROOT, "docker-compose.yml"), join(dir, "docker-compose.yml"));
    await copyFile(join(ROOT, "Dockerfile"), join(dir, "Dockerfile"));
    await copyFile(join(ROOT, ".env.example"), join(dir, ".env"));
    const { stdout } = await run(compose[0]!, [...compose.slice(1), "config"], { cwd: dir });
    services = (parse(stdout) as { services: Record<string, ComposeService> }).services;
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is valid: `config --quiet` exits 0", async () => {
    await expect(
      run(compose[0]!, [...compose.slice(1), "config", "--quiet"], { cwd: dir }),
    ).resolves.toBeDefined();
  });

  it("runs Redis with AOF persistence on a volume, and a gateway and two workers that wait for it", () => {
    expect(Object.keys(services).sort()).toEqual(["gateway", "redis", "worker"]);
    const redis = services.redis!;
    expect(redis.command).toEqual(expect.arrayContaining(["--appendonly", "yes"]));
    expect(JSON.stringify(redis.volumes)).toContain("/data");
    expect(redis.healthcheck?.test).toContain("ping");
    for (const name of ["gateway", "worker"]) {
      const service = services[name]!;
      expect(service.command).toEqual([name]);
      expect(service.depends_on?.redis?.condition).toBe("service_healthy");
      expect(service.environment?.REDIS_URL).toBe("redis://redis:6379");
    }
    expect(services.worker!.deploy?.replicas).toBe(2);
    // The playground and the ops port are published on this machine only.
    const ports = JSON.stringify(services.gateway!.ports);
    expect(ports).toMatch(/127\.0\.0\.1.*3000/);
    expect(ports).toMatch(/127\.0\.0\.1.*9464/);
    expect(services.gateway!.environment?.PLAYGROUND_HOST).toBe("0.0.0.0");
  });

  it("builds a runtime image with bubblewrap, which the shell tool's sandbox needs", async () => {
    const dockerfile = await readFile(join(ROOT, "Dockerfile"), "utf8");
    const runtime = dockerfile.slice(dockerfile.indexOf("AS runtime"));
    expect(runtime.replace(/\\\n/g, " ")).toMatch(/apt-get install [^\n]*\bbubblewrap\b/);
  });

  it("binds the playground beyond loopback without widening its host allowlist", () => {
    const gateway = services.gateway!.environment ?? {};
    expect(gateway.PLAYGROUND_HOST).toBe("0.0.0.0");
    // The playground keeps answering only to localhost / 127.0.0.1 / [::1] unless names are added on purpose.
    expect(gateway.PLAYGROUND_ALLOWED_HOSTS ?? "").toBe("");
  });

  it("hands every variable set in .env.example to both processes", async () => {
    const example = await readFile(join(ROOT, ".env.example"), "utf8");
    const names = [...example.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]!);
    expect(names).toEqual(expect.arrayContaining(["OPENAI_API_KEY", "SLACK_BOT_TOKEN", "DISCORD_TOKEN"]));
    for (const service of ["gateway", "worker"])
      for (const name of names) expect(services[service]!.environment).toHaveProperty(name);
  });
});
