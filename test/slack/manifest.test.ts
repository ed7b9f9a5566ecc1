import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_SUGGESTED_PROMPTS } from "../../src/config/index.js";

interface Manifest {
  display_information: { long_description: string };
  features: {
    agent_view?: { agent_description?: string; suggested_prompts?: { title: string; message: string }[] };
    assistant_view?: { assistant_description?: string };
  };
  oauth_config: { scopes: { bot: string[] } };
  settings: { event_subscriptions: { bot_events: string[] }; interactivity: { is_enabled: boolean } };
}

const manifest = JSON.parse(readFileSync("slack/manifest.json", "utf8")) as Manifest;
const inboundSource = readFileSync("src/slack/inbound.ts", "utf8");

describe("slack/manifest.json", () => {
  it("subscribes to every event the gateway handles, the native Stop button's included", () => {
    const handled = [...inboundSource.matchAll(/app\.event\("([a-z_]+)"/g)].map((match) => match[1]);
    expect(handled).toContain("agent_session_stopped");
    const events = manifest.settings.event_subscriptions.bot_events;
    // `message` arrives through the message.* subscriptions.
    for (const event of handled) {
      if (event === "message") expect(events.filter((e) => e.startsWith("message."))).toHaveLength(4);
      else expect(events).toContain(event);
    }
    expect(manifest.settings.interactivity.is_enabled).toBe(true);
  });

  it("declares the app as an agent (agent_view) and keeps the assistant_view fallback", () => {
    // https://docs.slack.dev/ai/agent-sessions: only apps declared as agents can create sessions.
    expect(manifest.features.agent_view?.agent_description).toBeTruthy();
    expect(manifest.features.assistant_view?.assistant_description).toBeTruthy();
    // The manifest's static prompts are the ones the gateway sets by default.
    expect(manifest.features.agent_view?.suggested_prompts).toEqual(DEFAULT_SUGGESTED_PROMPTS);
    // agents.sessions.setStatus and chat.*Stream need chat:write; agents carry assistant:write.
    expect(manifest.oauth_config.scopes.bot).toEqual(
      expect.arrayContaining(["chat:write", "assistant:write"]),
    );
    // "The minimum length is 174 characters" (https://docs.slack.dev/reference/app-manifest).
    expect(manifest.display_information.long_description.length).toBeGreaterThanOrEqual(174);
  });
});
