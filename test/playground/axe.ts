import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

/** axe-core's browser bundle, evaluated in the page (not as an inline script, so a CSP cannot block it). */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** The WCAG 2.0–2.2 A and AA rules. */
const WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"];

/**
 * Runs axe-core's WCAG 2.2 AA rules on the page as it is now and returns its serious and critical
 * violations, one readable line per failing element (`rule: selector — summary`); `[]` when there are none.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate("'axe' in window"))) await page.evaluate(AXE_SOURCE);
  // A string, not a function: the test project's TypeScript has no DOM library.
  const violations = (await page.evaluate(
    `axe.run(document, { runOnly: { type: "tag", values: ${JSON.stringify(WCAG_AA)} }, resultTypes: ["violations"] })
      .then((result) => result.violations)`,
  )) as Violation[];
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .flatMap((violation) =>
      violation.nodes.map(
        (node) =>
          `${violation.id}: ${node.target.join(" ")} — ${(node.failureSummary ?? "").replace(/\s+/g, " ")}`,
      ),
    );
}

/** The part of an axe-core violation this file reads. */
interface Violation {
  id: string;
  impact?: string | null;
  nodes: { target: unknown[]; failureSummary?: string }[];
}
