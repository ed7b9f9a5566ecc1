import { errorCode, type SlackApi } from "./api.js";
import { isDirectChannel, placeAllowed } from "./events.js";
import { ExpiringMap } from "./lookups.js";
import { allowed, type SlackAccess, type SlackLogger } from "./options.js";

/** A prompt Slack offers in the bot's DM: shown by `title`, sends `message` when clicked. */
export interface SlackPrompt {
  title: string;
  message: string;
}

/** What a DM offers: a heading and up to four prompts (none: nothing is set). */
export interface SlackSuggestedPrompts {
  title: string;
  prompts: readonly SlackPrompt[];
}

/** "Use this method to set up to four suggested prompts" (assistant.threads.setSuggestedPrompts). */
export const MAX_SUGGESTED_PROMPTS = 4;

/** `app_home_opened` (https://docs.slack.dev/reference/events/app_home_opened); team on the envelope. */
export interface HomeOpenedPayload {
  user?: string;
  channel?: string;
  tab?: string;
}

/** `assistant_thread_started` (https://docs.slack.dev/reference/events/assistant_thread_started). */
export interface AssistantThreadStartedPayload {
  assistant_thread?: { user_id?: string; channel_id?: string; thread_ts?: string };
}

/** A DM opened again within this long gets no second call (people flick between tabs). */
const REOPEN_QUIET_MS = 60_000;

/**
 * Offers the configured prompts when someone opens a DM with the bot, in both of Slack's AI-app
 * experiences (https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts):
 * - agent apps (`agent_view`): `app_home_opened` with `tab: "messages"` replaces `assistant_thread_started`
 *   (https://docs.slack.dev/ai/migrating-to-agent-messaging/), and the call goes without `thread_ts` —
 *   "Including it in a call for an agent app will cause the call to silently fail";
 * - the legacy assistant split view (`assistant_view`): on `assistant_thread_started`, for its thread.
 * Best effort: a workspace without the method, or a used-up budget, is logged and skipped; never rejects.
 */
export class PromptSuggester {
  private readonly recentlyOffered = new ExpiringMap<true>(10_000, REOPEN_QUIET_MS);

  constructor(
    private readonly api: SlackApi,
    private readonly suggestions: SlackSuggestedPrompts,
    private readonly access: SlackAccess,
    private readonly log: SlackLogger,
  ) {}

  /** The agent experience: the user opened the bot's Messages tab. */
  async homeOpened(team: string, event: HomeOpenedPayload): Promise<void> {
    if (event.tab !== "messages" || !event.channel || !event.user) return;
    if (this.recentlyOffered.get(`${team}:${event.channel}`)) return;
    this.recentlyOffered.set(`${team}:${event.channel}`, true);
    await this.offer(team, event.channel, event.user, undefined);
  }

  /** The legacy assistant experience: a new assistant thread. */
  async threadStarted(team: string, event: AssistantThreadStartedPayload): Promise<void> {
    const thread = event.assistant_thread;
    if (!thread?.channel_id || !thread.thread_ts || !thread.user_id) return;
    await this.offer(team, thread.channel_id, thread.user_id, thread.thread_ts);
  }

  private async offer(team: string, channel: string, user: string, threadTs: string | undefined) {
    const prompts = this.suggestions.prompts.slice(0, MAX_SUGGESTED_PROMPTS);
    if (prompts.length === 0) return;
    if (!isDirectChannel(channel) || !placeAllowed(team, channel, true, this.access)) return;
    if (!allowed(this.access.users, user)) return;
    const args: Record<string, unknown> = {
      channel_id: channel,
      title: this.suggestions.title,
      prompts: prompts.map(({ title, message }) => ({ title, message })),
    };
    if (threadTs !== undefined) args.thread_ts = threadTs;
    try {
      await this.api.tryCall("assistant.threads.setSuggestedPrompts", { team, channel }, args);
    } catch (err) {
      this.log.info({ team, channel, code: errorCode(err) }, "slack: could not set the suggested prompts");
    }
  }
}
