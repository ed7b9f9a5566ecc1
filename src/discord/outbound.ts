import {
  type APIChannel,
  type APIMessage,
  DiscordAPIError,
  type REST,
  RESTJSONErrorCodes,
  Routes,
} from "discord.js";
import {
  type ApprovalCard,
  type ChatOutbound,
  emojiFor,
  type OutboundLimits,
  type PostedMessage,
  type ThreadRef,
  threadId,
} from "../chat/index.js";
import { approvalMessageBody } from "./approval-card.js";
import { DISCORD_DIALECT } from "./dialect.js";
import { type DiscordLogger, SILENT_DISCORD_LOGGER } from "./logger.js";
import { PRIORITY_HEADER } from "./rest.js";
import { channelOfMessage } from "./threads.js";

/** Discord's longest message content. */
export const DISCORD_MAX_MESSAGE_CHARS = 2000;

/** Default pause between edits of one message: Discord allows about 5 edits per 5 s per channel. */
export const DISCORD_EDIT_INTERVAL_MS = 1000;

/** A typing indicator lasts 10 s on Discord; it is renewed a little earlier. */
export const DISCORD_TYPING_RENEW_MS = 8000;

const NO_MENTIONS = { parse: [] as [] };
const URGENT = { [PRIORITY_HEADER]: "high" };

/** Options of {@link DiscordOutbound}. */
export interface DiscordOutboundOptions {
  /** REST client with the token set (no gateway connection needed). */
  rest: REST;
  /** Minimum interval between edits of one message; default {@link DISCORD_EDIT_INTERVAL_MS}. */
  minEditIntervalMs?: number;
  /** How often a shown typing indicator is renewed; default {@link DISCORD_TYPING_RENEW_MS}. */
  typingRenewMs?: number;
  log?: DiscordLogger;
}

/** The last reply message the bot posted in a thread while a status was shown. */
interface Draft {
  id: string;
  text: string;
  edited: boolean;
}

/**
 * {@link ChatOutbound} over Discord's REST API. The bot posts in the thread channel; reactions go to the
 * channel that holds the message (the message a thread was started on lives in the parent channel).
 * Markdown is kept ({@link DISCORD_DIALECT}), messages are at most 2,000 characters.
 *
 * Status: a non-null status sends Discord's typing indicator and renews it every
 * `typingRenewMs` until a `null` status (or the run's end) stops it. Final answer: the renderer posts one
 * reply and edits it while text streams, and Discord does not notify anyone of edits. So when the run ends
 * (`endRun`) and the last reply message of the run was edited after it was posted,
 * its final text is posted again as a fresh message (the channel shows unread, followers are notified)
 * and the edited draft is then deleted in the background. Earlier reply messages stay where they are,
 * so the order is kept.
 */
export class DiscordOutbound implements ChatOutbound {
  readonly limits: OutboundLimits;
  readonly dialect = DISCORD_DIALECT;
  private readonly rest: REST;
  private readonly typingRenewMs: number;
  private readonly log: DiscordLogger;
  private readonly typing = new Map<string, NodeJS.Timeout>();
  private readonly drafts = new Map<string, Draft>();
  private readonly dmChannels = new Map<string, string>();

  constructor(options: DiscordOutboundOptions) {
    this.rest = options.rest;
    this.typingRenewMs = options.typingRenewMs ?? DISCORD_TYPING_RENEW_MS;
    this.log = options.log ?? SILENT_DISCORD_LOGGER;
    this.limits = {
      maxMessageChars: DISCORD_MAX_MESSAGE_CHARS,
      minEditIntervalMs: options.minEditIntervalMs ?? DISCORD_EDIT_INTERVAL_MS,
    };
  }

  async post(thread: ThreadRef, text: string): Promise<PostedMessage> {
    const message = (await this.rest.post(Routes.channelMessages(thread.thread), {
      body: { content: text, allowed_mentions: NO_MENTIONS },
    })) as APIMessage;
    const key = threadId(thread);
    if (this.typing.has(key)) this.drafts.set(key, { id: message.id, text, edited: false });
    return { id: message.id };
  }

  /** Posts a message whose mentions of `userIds` notify them (a plain {@link post} pings nobody). */
  async postNotifying(thread: ThreadRef, text: string, userIds: string[]): Promise<PostedMessage> {
    const message = (await this.rest.post(Routes.channelMessages(thread.thread), {
      body: { content: text, allowed_mentions: { parse: [], users: userIds } },
    })) as APIMessage;
    return { id: message.id };
  }

  async edit(thread: ThreadRef, messageId: string, text: string): Promise<void> {
    await this.rest.patch(Routes.channelMessage(thread.thread, messageId), {
      body: { content: text, allowed_mentions: NO_MENTIONS },
    });
    const draft = this.drafts.get(threadId(thread));
    if (draft?.id === messageId) Object.assign(draft, { text, edited: true });
  }

  async delete(thread: ThreadRef, messageId: string): Promise<void> {
    const key = threadId(thread);
    if (this.drafts.get(key)?.id === messageId) this.drafts.delete(key);
    await ignoring([RESTJSONErrorCodes.UnknownMessage], () =>
      this.rest.delete(Routes.channelMessage(thread.thread, messageId)),
    );
  }

  async react(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    const channel = channelOfMessage(thread, messageId);
    await this.rest.put(Routes.channelMessageOwnReaction(channel, messageId, encodeEmoji(emoji)));
  }

  async unreact(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    const channel = channelOfMessage(thread, messageId);
    await ignoring([RESTJSONErrorCodes.UnknownMessage, RESTJSONErrorCodes.UnknownEmoji], () =>
      this.rest.delete(Routes.channelMessageOwnReaction(channel, messageId, encodeEmoji(emoji))),
    );
  }

  async setStatus(thread: ThreadRef, status: string | null): Promise<void> {
    const key = threadId(thread);
    const timer = this.typing.get(key);
    if (status !== null) {
      if (timer !== undefined) return;
      const renew = setInterval(() => {
        this.sendTyping(thread).catch((err: unknown) =>
          this.log.warn({ err, threadId: key }, "typing indicator renewal failed"),
        );
      }, this.typingRenewMs);
      renew.unref();
      this.typing.set(key, renew);
      await this.sendTyping(thread);
      return;
    }
    if (timer !== undefined) clearInterval(timer);
    this.typing.delete(key);
  }

  /**
   * Stops the typing indicator and reposts the run's last reply message when it was edited. The draft is
   * forgotten here only: a status cleared and shown again mid-run keeps it.
   */
  async endRun(thread: ThreadRef): Promise<void> {
    const key = threadId(thread);
    clearInterval(this.typing.get(key));
    this.typing.delete(key);
    const draft = this.drafts.get(key);
    this.drafts.delete(key);
    if (draft?.edited) await this.repost(thread, draft);
  }

  async postApproval(thread: ThreadRef, card: ApprovalCard): Promise<PostedMessage> {
    const message = (await this.rest.post(Routes.channelMessages(thread.thread), {
      body: approvalMessageBody(card),
    })) as APIMessage;
    return { id: message.id };
  }

  async updateApproval(thread: ThreadRef, messageId: string, card: ApprovalCard): Promise<void> {
    await this.rest.patch(Routes.channelMessage(thread.thread, messageId), {
      body: approvalMessageBody(card),
      headers: URGENT,
    });
  }

  /**
   * Discord has no ephemeral messages outside interactions, so the notice goes to the user's DMs; when
   * they do not accept DMs from the bot, it is posted in the thread addressed to them.
   */
  async notify(thread: ThreadRef, userId: string, text: string): Promise<void> {
    try {
      const channel = await this.dmChannel(userId);
      await this.rest.post(Routes.channelMessages(channel), {
        body: { content: text, allowed_mentions: NO_MENTIONS },
      });
    } catch (err) {
      if (!(err instanceof DiscordAPIError)) throw err;
      await this.rest.post(Routes.channelMessages(thread.thread), {
        body: { content: `${this.dialect.mention(userId)} ${text}`, allowed_mentions: { users: [userId] } },
      });
    }
  }

  /** Stops every typing renewal (shutdown). */
  close(): void {
    for (const timer of this.typing.values()) clearInterval(timer);
    this.typing.clear();
    this.drafts.clear();
  }

  private async sendTyping(thread: ThreadRef): Promise<void> {
    await this.rest.post(Routes.channelTyping(thread.thread));
  }

  /**
   * Posts the final text as a fresh message, then deletes the edited draft (kept if the post failed). The
   * deletion is not awaited (it runs at low priority and only tidies up), so the run's job is not held by
   * the shared budget; a failure is logged.
   */
  private async repost(thread: ThreadRef, draft: Draft): Promise<void> {
    await this.rest.post(Routes.channelMessages(thread.thread), {
      body: { content: draft.text, allowed_mentions: NO_MENTIONS },
    });
    ignoring([RESTJSONErrorCodes.UnknownMessage], () =>
      this.rest.delete(Routes.channelMessage(thread.thread, draft.id)),
    ).catch((err: unknown) =>
      this.log.warn(
        { err, threadId: threadId(thread), messageId: draft.id },
        "could not delete a reposted draft",
      ),
    );
  }

  private async dmChannel(userId: string): Promise<string> {
    const known = this.dmChannels.get(userId);
    if (known !== undefined) return known;
    const channel = (await this.rest.post(Routes.userChannels(), {
      body: { recipient_id: userId },
    })) as APIChannel;
    this.dmChannels.set(userId, channel.id);
    return channel.id;
  }
}

/** The URL form of a reaction: Unicode for known names, `name:id` custom emoji passed through. */
function encodeEmoji(name: string): string {
  return encodeURIComponent(emojiFor(name));
}

/** Runs `action`, treating the listed Discord error codes as success (the goal is already reached). */
async function ignoring(codes: readonly number[], action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (err) {
    if (err instanceof DiscordAPIError && typeof err.code === "number" && codes.includes(err.code)) return;
    throw err;
  }
}
