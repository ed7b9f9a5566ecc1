import { execFile, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliChild, eventually, processesIn } from "../app/cli-child.js";
import { FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { freePort } from "../support/net.js";
import { codeBlocks, inlineCommands, section } from "./readme.js";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/**
 * The commit to clone (default the checkout's HEAD); an older one shows what a newcomer got then, and
 * `worktree` copies the checkout's files as they are now (what the next commit will hold).
 */
const REF = process.env.README_TEST_REF ?? "HEAD";
/** The shutdown deadline the test gives `npm start` (its default is 20 s). */
const DEADLINE_MS = 4000;
const ANSWER = "Hello Ada, the weather tool is ready.";

/**
 * A newcomer with only the README: a fresh clone, the Quick start's commands as written there, the config
 * and tool examples pasted as they are, the playground in Chromium, then Ctrl-C during a run.
 */
describe("the README, followed by a newcomer", () => {
  let clone: string;
  let model: FakeOpenAIServer;
  let port: number;
  let app: CliChild | undefined;
  let browser: Browser | undefined;
  let page: Page | undefined;
  let readme: string;

  beforeAll(async () => {
    clone = mkdtempSync(join(tmpdir(), "threadline-readme-"));
    if (REF === "worktree") {
      const { stdout } = await run("git", ["-C", ROOT, "ls-files", "-z", "-c", "-o", "--exclude-standard"], {
        maxBuffer: 1 << 24,
      });
      for (const file of stdout.split("\0").filter((name) => name !== "" && existsSync(join(ROOT, name)))) {
        mkdirSync(dirname(join(clone, file)), { recursive: true });
        copyFileSync(join(ROOT, file), join(clone, file));
      }
    } else {
      await run("git", ["clone", "--quiet", "--no-checkout", ROOT, clone]);
      await run("git", ["-C", clone, "checkout", "--quiet", REF]);
    }
    readme = readFileSync(join(clone, "README.md"), "utf8");
    model = await FakeOpenAIServer.start();
    model.models = ["gpt-4o-mini"]; // the config example's model
    port = await freePort();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    app?.kill();
    for (const pid of await processesIn(join(clone, ".threadline"))) process.kill(pid, "SIGKILL");
    await model.close();
    rmSync(clone, { recursive: true, force: true });
  }, 30_000);

  it("the Quick start's commands are the ones npm runs in a clone", () => {
    const commands = codeBlocks(section(readme, "Quick start"), "sh").flat();
    expect(commands).toEqual(["npm ci", "npm start"]);
    const scripts = Object.keys(
      (JSON.parse(readFileSync(join(clone, "package.json"), "utf8")) as { scripts: Record<string, string> })
        .scripts,
    );
    // Every `npm run <x>` the README tells a reader to type exists; `npx threadline` is never offered in a clone.
    for (const command of inlineCommands(readme)) {
      const script = command.match(/^npm run ([\w:-]+)/)?.[1];
      if (script) expect(scripts, command).toContain(script);
    }
    // The platform sections say how to start in a clone, not only with the published package's `npx threadline`.
    for (const name of ["Run on Slack", "Run on Discord"]) {
      expect(inlineCommands(section(readme, name)), name).toEqual(
        expect.arrayContaining(["npm start", "npm run doctor"]),
      );
    }
  });

  it("npm ci, the pasted examples, npm run doctor, npm start: the playground answers in Chromium", async () => {
    // `npm ci` as written when README_TEST_NPM_CI=1 (half a minute, 460 MB); else the checkout's own
    // install of the same lockfile, linked in.
    if (process.env.README_TEST_NPM_CI === "1") {
      await run("npm", ["ci", "--no-audit", "--no-fund"], { cwd: clone, maxBuffer: 1 << 24 });
    } else {
      expect(readFileSync(join(clone, "package-lock.json"), "utf8")).toBe(
        readFileSync(join(ROOT, "package-lock.json"), "utf8"),
      );
      symlinkSync(join(ROOT, "node_modules"), join(clone, "node_modules"), "dir");
    }
    // The README's config and tool examples, pasted into the files their first line names.
    for (const name of ["Configuration", "Add a tool"]) {
      const [example] = codeBlocks(section(readme, name), "ts");
      const file = example?.[0]?.match(/^\/\/ (\S+)$/)?.[1];
      expect(file, `the first ${name} example names its file`).toBeDefined();
      mkdirSync(dirname(join(clone, file!)), { recursive: true });
      writeFileSync(join(clone, file!), `${example!.join("\n")}\n`);
    }
    // "put OPENAI_API_KEY=… (or OPENAI_BASE_URL=…) in .env": here, the local fake model.
    writeFileSync(
      join(clone, ".env"),
      [`OPENAI_BASE_URL=${model.baseURL}`, "OPENAI_API_KEY=sk-newcomer", `PORT=${port}`, "OPS_PORT=0"].join(
        "\n",
      ),
    );

    const doctor = await npm(clone, ["run", "doctor", "--silent"]);
    expect(doctor.output).toContain("Everything needed is in place.");
    expect(doctor.code).toBe(0);

    app = CliChild.spawnCommand("npm", ["start"], clone, { SHUTDOWN_TIMEOUT_MS: String(DEADLINE_MS) });
    await app.waitForLine("gateway receiving events", 90_000);
    // The start-up log says which model and endpoint answer (the config example's model, .env's endpoint).
    await app.waitForLine(`model gpt-4o-mini at ${model.baseURL}`);

    model.enqueue(textReply(ANSWER));
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.getByLabel("Your name").fill("Ada");
    await page.getByRole("button", { name: "Start chatting" }).click();
    await send(page, "Say hello");
    await page.locator(".msg-bot .text", { hasText: ANSWER }).waitFor({ timeout: 30_000 });
    // The config example's tool reached the model.
    const chat = model.requests.filter((request) => request.path === "/chat/completions").at(-1);
    const tools = (chat?.body as { tools?: { function: { name: string } }[] } | undefined)?.tools ?? [];
    expect(tools.map((tool) => tool.function.name)).toContain("get_weather");
  }, 180_000);

  it("on a phone (390 px): no sideways scrolling, Send in view, the thread list in a drawer, tap to react", async () => {
    expect(browser, "npm start is running").toBeDefined();
    const phone = await browser!.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 3,
    });
    const mobile = await phone.newPage();
    const noSidewaysScroll = async () =>
      expect(Number(await mobile.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(390);
    await mobile.goto(`http://127.0.0.1:${port}/`);
    await mobile.getByLabel("Your name").fill("Bea");
    await mobile.getByRole("button", { name: "Start chatting" }).tap();
    await noSidewaysScroll();
    const send = await mobile.getByRole("button", { name: "Send" }).boundingBox();
    expect(send!.x + send!.width).toBeLessThanOrEqual(390);
    // biome-ignore lint/performance/useDomNodeTextContent: the hint as shown (CSS hides the other one)
    const hint = await mobile.locator(".hint").innerText();
    expect(hint).toContain("tap a message to react");
    expect(hint).not.toContain("hover");

    // The thread list, New thread and rename live in a drawer behind the header's Threads button.
    const thread = mobile.locator(".thread-link", { hasText: "Say hello" });
    expect(await thread.isVisible()).toBe(false);
    await mobile.getByRole("button", { name: "Threads" }).tap();
    await thread.waitFor({ state: "visible" });
    await mobile.waitForTimeout(300); // the drawer's slide-in, for the screenshot only
    await mobile.screenshot({ path: "/tmp/playground-phone-drawer.png" }); // for review, not compared
    expect(await mobile.getByRole("button", { name: "+ New thread" }).isVisible()).toBe(true);
    expect(await mobile.getByRole("button", { name: "change" }).isVisible()).toBe(true);
    await thread.tap();
    await mobile.locator(".msg-bot .text", { hasText: ANSWER }).waitFor();
    await mobile.locator("#sidebar").waitFor({ state: "hidden" });
    await noSidewaysScroll();

    // No hover on a phone: a tap on the message shows its reactions.
    const message = mobile.locator(".msg-user", { hasText: "Say hello" });
    await message.locator(".text").tap();
    await message.getByRole("button", { name: /React .* steer/ }).tap();
    await message.locator(".reactions .reaction").first().waitFor();
    await mobile.screenshot({ path: "/tmp/playground-phone.png" });
    await phone.close();
  }, 60_000);

  it("Ctrl-C during a run stops npm start and its private redis-server within the deadline", async () => {
    expect(app, "npm start is running").toBeDefined();
    const chats = () => model.requests.filter((request) => request.path === "/chat/completions").length;
    const before = chats();
    model.handler = (request) => (request.path === "/chat/completions" ? { kind: "hang" } : undefined);
    await send(page!, "Now something long");
    expect(await eventually(async () => chats() > before, 10_000), "the run is waiting for the model").toBe(
      true,
    );
    expect(await processesIn(join(clone, ".threadline"))).toHaveLength(1);
    app!.ctrlC();
    expect(await app!.exitWithin(DEADLINE_MS + 5000)).not.toBe("still running");
    // Nothing started from the clone is left: npm, tsx, node, the private redis-server.
    const left = async () => processesIn(clone);
    expect(await eventually(async () => (await left()).length === 0, DEADLINE_MS)).toBe(true);
  }, 60_000);
});

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel("Message", { exact: true }).fill(text);
  await page.getByRole("button", { name: "Send" }).click();
  await page.locator(".msg-user", { hasText: text }).waitFor();
}

/** `npm <args>` in `cwd`; resolves with its exit code and output (it never rejects). */
function npm(cwd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn("npm", args, {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    });
    let output = "";
    child.stdout.on("data", (data: Buffer) => {
      output += data.toString("utf8");
    });
    child.stderr.on("data", (data: Buffer) => {
      output += data.toString("utf8");
    });
    child.on("exit", (code) => done({ code, output }));
  });
}

async function launchChromium(): Promise<Browser> {
  try {
    return await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
      ],
    });
  } catch (err) {
    throw new Error(
      `Chromium could not start from ${CHROMIUM} (install Debian's with "apt-get install -y chromium", or set CHROMIUM_PATH): ${(err as Error).message}`,
    );
  }
}
