/**
 * `npm run test:stress`: runs the end-to-end tests again and again on a machine kept busy, so that races
 * which pass when the suite runs alone show up (issue 12, item 17). Busy = `--load` child processes that
 * spin on the CPU for the whole run. Prints, per test, how many rounds it failed in; exits 1 if any did.
 *
 *   npm run test:stress -- [--rounds 5] [--load 2] [test files…]
 *
 * Default files: the Slack, Discord and playground conversations and the runs' race and worker tests.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const DEFAULT_FILES = [
  "test/slack/conversation.test.ts",
  "test/discord/conversation.test.ts",
  "test/playground/api.test.ts",
  "test/runs/race.test.ts",
  "test/runs/workers.test.ts",
  "test/runs/invariants.test.ts",
];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: "string", default: "5" }, load: { type: "string", default: "2" } },
});
const rounds = Number(values.rounds);
const load = Number(values.load);
const files = positionals.length > 0 ? positionals : DEFAULT_FILES;

const burners: ChildProcess[] = [];
function stopBurners(): void {
  for (const burner of burners.splice(0)) burner.kill("SIGKILL");
}
process.on("exit", stopBurners);
process.on("SIGINT", () => process.exit(130));
for (let i = 0; i < load; i++) {
  burners.push(spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
}

interface VitestReport {
  testResults: { name: string; assertionResults: { fullName: string; status: string }[] }[];
}

function round(index: number): Promise<Map<string, string>> {
  const output = join(tmpdir(), `threadline-stress-${process.pid}-${index}.json`);
  return new Promise((resolve) => {
    const vitest = spawn("npx", ["vitest", "run", "--reporter=json", `--outputFile=${output}`, ...files], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    vitest.once("exit", () => {
      const statuses = new Map<string, string>();
      try {
        const report = JSON.parse(readFileSync(output, "utf8")) as VitestReport;
        for (const file of report.testResults) {
          for (const test of file.assertionResults) statuses.set(test.fullName, test.status);
        }
      } catch {
        statuses.set("(the vitest run itself)", "failed");
      }
      rmSync(output, { force: true });
      resolve(statuses);
    });
  });
}

const failures = new Map<string, number>();
let tests = 0;
for (let i = 1; i <= rounds; i++) {
  const statuses = await round(i);
  tests = Math.max(tests, statuses.size);
  const failed = [...statuses].filter(([, status]) => status === "failed").map(([name]) => name);
  for (const name of failed) failures.set(name, (failures.get(name) ?? 0) + 1);
  process.stdout.write(`round ${i}/${rounds}: ${statuses.size - failed.length}/${statuses.size} passed\n`);
}
stopBurners();
process.stdout.write(`\n${tests} tests × ${rounds} rounds with ${load} CPU burner(s)\n`);
if (failures.size === 0) {
  process.stdout.write("no failures\n");
} else {
  for (const [name, count] of [...failures].sort((a, b) => b[1] - a[1])) {
    process.stdout.write(`failed ${count}/${rounds}: ${name}\n`);
  }
  process.exitCode = 1;
}
