import { describe, expect, it } from "vitest";
import { Metrics } from "../../src/app/metrics.js";

describe("threadline_feedback_total", () => {
  it("counts the platforms' feedback clicks by platform and value", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const observer = metrics.platformObserver();
    observer.feedback?.("slack", "positive");
    observer.feedback?.("slack", "positive");
    observer.feedback?.("slack", "negative");
    const { body } = await metrics.render();
    expect(body).toContain('threadline_feedback_total{platform="slack",value="positive"} 2');
    expect(body).toContain('threadline_feedback_total{platform="slack",value="negative"} 1');
  });
});
