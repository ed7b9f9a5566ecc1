import {
  type ButtonInteraction,
  type Client,
  DiscordAPIError,
  Events,
  GuildMember,
  type Interaction,
  type Message,
  MessageFlags,
  type MessageReaction,
  MessageType,
  type ModalSubmitInteraction,
  type PartialMessage,
  type PartialMessageReaction,
  type PartialUser,
  type REST,
  RESTJSONErrorCodes,
  Routes,
  type User,
} from "discord.js";
import {
  type ChatInbound,
  DeliveryDedupe,
  emojiName,
  type IncomingMessage,
  type ThreadRef,
  ThreadSerial,
} from "../chat/index.js";
import { type DiscordAccess, isAllowed } from "./access.js";
import { parseApprovalCustomId } from "./approval-card.js";
import {
  approvalModal,
  DISCORD_MODAL_LIMITS,
  parseApprovalFormId,
  submitApprovalModal,
} from "./approval-modal.js";
import { type HistoryLimits, threadHistory } from "./history.js";
import type { DiscordLogger } from "./logger.js";
import {
  attachmentsOf,
  botRoleIds,
  channelIdsOf,
  chatUser,
  mentionsBotIn,
  messageText,
  placeOf,
  roleIdsOf,
} from "./normalize.js";
import { type ChannelPlace, threadName, threadRefIn } from "./threads.js";

/** What {@link DiscordReceiver} needs. */
export interface DiscordReceiverOptions {
  /** A logged-in (or logging-in) discord.js client; only its events and cache are used. */
  client: Client;
  /** The budgeted REST client for the receiver's own calls (threads, history, notices). */
  rest: REST;
  inbound: ChatInbound;
  access: DiscordAccess;
  log: DiscordLogger;
  historyLimits?: HistoryLimits;
}

/**
 * The receiving side of the Discord adapter: normalizes gateway events into {@link ChatInbound} calls and
 * decides nothing else. Messages, edits, deletions and reactions of one thread are handed over in arrival
 * order ({@link ThreadSerial}: a mention waiting for its thread or history is never overtaken by the
 * reply after it); threads proceed independently. Discord's gateway has no acknowledgements: a message is
 * stored by the gateway's intake, which retries while Redis is away and marks the message ⚠️ if it must
 * give up. A mention in a text channel first starts a thread on the message
 * (named after the request); a mention inside an existing thread brings its earlier messages along. Bots'
 * messages are ignored; the access lists apply to messages and reactions. Button clicks are deferred at
 * once (Discord's 3 s rule), then decided; a refusal is answered with an ephemeral follow-up.
 * Handlers never throw: failures are logged.
 */
export class DiscordReceiver {
  private readonly serial: ThreadSerial;
  /** New messages handled (or being handled) here, by message id: a RESUME may replay one. */
  private readonly delivered = new DeliveryDedupe();

  constructor(private readonly options: DiscordReceiverOptions) {
    this.serial = new ThreadSerial({
      onHeld: (thread) =>
        options.log.warn(
          { thread: thread.thread },
          "discord: an event held its thread too long; the next goes on",
        ),
    });
  }

  /** Subscribes to the client's events. */
  attach(): void {
    const { client } = this.options;
    client.on(Events.MessageCreate, (message) => this.onMessage(message));
    client.on(Events.MessageUpdate, (_old, message) => this.onEdit(message));
    client.on(Events.MessageDelete, (message) => this.onDelete(message));
    client.on(Events.MessageReactionAdd, (reaction, user) => this.onReaction(reaction, user, true));
    client.on(Events.MessageReactionRemove, (reaction, user) => this.onReaction(reaction, user, false));
    client.on(Events.InteractionCreate, (interaction) => this.onInteraction(interaction));
  }

  private get botId(): string {
    return this.options.client.user?.id ?? "";
  }

  private onMessage(message: Message): void {
    if (message.author.bot || message.webhookId !== null) return;
    if (message.type !== MessageType.Default && message.type !== MessageType.Reply) return;
    const place = placeOf(message.channel);
    const roles = botRoleIds(message, this.botId);
    const mentionsBot = place.kind === "dm" || mentionsBotIn(message.content, this.botId, roles);
    const thread = threadRefIn(place, message.id);
    if (!thread || (place.kind === "text" && !mentionsBot)) return;
    if (!this.allowed(place, message.author.id, message.member)) return;
    // A RESUME replays what the session missed, possibly a message handled here already: that one starts
    // no second thread, history read or 👀 (the intake would drop it again by its id anyway).
    if (this.delivered.has(message.id)) return;
    // 👀 now, before the thread is started and its history read (the reaction needs neither).
    if (mentionsBot) void this.options.inbound.acknowledge?.(thread, message.id, message.author.id);
    this.queue(thread, "message", message.id, this.delivered, async () => {
      const incoming = this.incoming(message, thread, mentionsBot, roles);
      if (place.kind === "text" && !(await this.startThread(message, incoming.text))) return;
      if (mentionsBot && place.kind === "thread") {
        const history = await threadHistory({
          rest: this.options.rest,
          threadChannelId: thread.thread,
          beforeId: message.id,
          botId: this.botId,
          ...(this.options.historyLimits ? { limits: this.options.historyLimits } : {}),
        });
        if (history.length > 0) incoming.history = history;
      }
      await this.options.inbound.message(incoming);
    });
  }

  private onEdit(message: Message | PartialMessage): void {
    if (message.author?.bot || message.content === null) return;
    const place = placeOf(message.channel);
    // The message a thread was started on is its run's prompt: an edit there changes nothing.
    if (place.kind !== "thread" && place.kind !== "dm") return;
    const thread = threadRefIn(place, message.id);
    if (!thread || !message.author || !this.allowed(place, message.author.id, message.member)) return;
    const author = message.author;
    this.queue(thread, "edit", message.id, undefined, async () => {
      const roles = botRoleIds(message, this.botId);
      const mentionsBot = place.kind === "dm" || mentionsBotIn(message.content ?? "", this.botId, roles);
      await this.options.inbound.messageEdited(this.incoming(message, thread, mentionsBot, roles, author));
    });
  }

  private onDelete(message: Message | PartialMessage): void {
    if (message.author?.bot) return;
    const place = placeOf(message.channel);
    if (place.kind !== "thread" && place.kind !== "dm") return;
    const thread = threadRefIn(place, message.id);
    if (!thread) return;
    this.queue(thread, "delete", message.id, undefined, () =>
      this.options.inbound.messageDeleted(thread, message.id),
    );
  }

  private onReaction(
    reaction: MessageReaction | PartialMessageReaction,
    user: User | PartialUser,
    added: boolean,
  ) {
    if (user.id === this.botId || user.bot) return;
    const message = reaction.message;
    const place = placeOf(message.channel);
    const thread = threadRefIn(place, message.id);
    const member = message.guild?.members.cache.get(user.id) ?? null;
    if (!thread || !this.allowed(place, user.id, member)) return;
    const { emoji } = reaction;
    const name = emoji.id ? `${emoji.name ?? "_"}:${emoji.id}` : emojiName(emoji.name ?? "");
    this.queue(thread, "reaction", message.id, undefined, () =>
      this.options.inbound.reaction({
        thread,
        messageId: message.id,
        user: chatUser(user as User, member, this.botId),
        emoji: name,
        added,
      }),
    );
  }

  private onInteraction(interaction: Interaction): void {
    if (
      interaction.isModalSubmit() ||
      (interaction.isButton() && parseApprovalFormId(interaction.customId))
    ) {
      this.form(interaction).catch((err: unknown) =>
        this.options.log.error({ err, interactionId: interaction.id }, "discord: approval form failed"),
      );
      return;
    }
    if (!interaction.isButton()) return;
    const parsed = parseApprovalCustomId(interaction.customId);
    if (!parsed) return;
    this.click(interaction, parsed).catch((err: unknown) =>
      this.options.log.error({ err, interactionId: interaction.id }, "discord: approval click failed"),
    );
  }

  /**
   * Deny with a reason / edit and approve. A form button is answered with the modal (type 9) when the
   * clicker may decide, else with an ephemeral notice — the modal must be the interaction's first answer,
   * so it is not deferred. The modal's submission is handled by {@link submitApprovalModal}.
   */
  private async form(interaction: ButtonInteraction | ModalSubmitInteraction): Promise<void> {
    const message = interaction.message;
    if (!message) return;
    const thread = threadRefIn(placeOf(interaction.channel), message.id);
    if (!thread) return;
    const member = interaction.member instanceof GuildMember ? interaction.member : null;
    const user = chatUser(interaction.user, member, this.botId);
    if (interaction.isModalSubmit()) {
      await submitApprovalModal(interaction, this.options.inbound, thread, user);
      return;
    }
    const parsed = parseApprovalFormId(interaction.customId)!;
    const form = this.options.inbound.approvalForm
      ? await this.options.inbound.approvalForm(thread, parsed.approvalId, user)
      : { kind: "notice" as const, text: "This approval can't be changed here." };
    if (form.kind === "notice") {
      await interaction.reply({ content: form.text, flags: MessageFlags.Ephemeral });
      return;
    }
    if (parsed.form === "edit" && form.argumentsJson.length > DISCORD_MODAL_LIMITS.value) {
      await interaction.reply({
        content: `The arguments of \`${form.toolName}\` are too long to edit in Discord; use Approve or Deny.`,
        flags: MessageFlags.Ephemeral,
      });
      return;
    }
    await interaction.showModal(
      approvalModal(parsed.form, parsed.approvalId, form.toolName, form.argumentsJson),
    );
  }

  private async click(
    interaction: ButtonInteraction,
    parsed: NonNullable<ReturnType<typeof parseApprovalCustomId>>,
  ): Promise<void> {
    // Acknowledge before anything else: Discord drops interactions not answered within 3 s.
    const deferred = await interaction.deferUpdate().then(
      () => true,
      (err: unknown) => {
        this.options.log.warn({ err, interactionId: interaction.id }, "discord: could not defer a click");
        return false;
      },
    );
    const thread = threadRefIn(placeOf(interaction.channel), interaction.message.id);
    if (!thread) return;
    const member = interaction.member instanceof GuildMember ? interaction.member : null;
    const reply = await this.options.inbound.button({
      thread,
      approvalId: parsed.approvalId,
      decision: parsed.decision,
      user: chatUser(interaction.user, member, this.botId),
    });
    if (reply.kind === "notice" && deferred) {
      await interaction.followUp({ content: reply.text, flags: MessageFlags.Ephemeral });
    }
  }

  private incoming(
    message: Message | PartialMessage,
    thread: ThreadRef,
    mentionsBot: boolean,
    roles: string[],
    author: User = message.author as User,
  ): IncomingMessage {
    return {
      id: message.id,
      thread,
      author: chatUser(author, message.member, this.botId),
      text: messageText(message, this.botId, roles),
      attachments: attachmentsOf(message.attachments),
      mentionsBot,
      sentAt: message.createdTimestamp,
    };
  }

  /**
   * Starts the thread of a mention in a text channel (its id is the message's). A thread that already
   * exists on the message (a replayed event, or one a person started) is used as is. Anything else is
   * logged and told in the channel; the message is then dropped.
   */
  private async startThread(message: Message, text: string): Promise<boolean> {
    try {
      await this.options.rest.post(Routes.threads(message.channelId, message.id), {
        body: { name: threadName(text), auto_archive_duration: 1440 },
      });
      return true;
    } catch (err) {
      if (err instanceof DiscordAPIError && err.code === RESTJSONErrorCodes.ThreadAlreadyCreatedForMessage) {
        return true;
      }
      this.options.log.warn({ err, channelId: message.channelId }, "discord: could not start a thread");
      await this.options.rest
        .post(Routes.channelMessages(message.channelId), {
          body: {
            content:
              "I couldn't start a thread for this here; please check that I may create public threads.",
            message_reference: { message_id: message.id, fail_if_not_exists: false },
            allowed_mentions: { parse: [] },
          },
        })
        .catch(() => undefined);
      return false;
    }
  }

  private allowed(place: ChannelPlace, userId: string, member: GuildMember | null | undefined): boolean {
    return isAllowed(this.options.access, {
      guildId: place.kind === "text" || place.kind === "thread" ? place.guildId : undefined,
      channelIds: channelIdsOf(place),
      userId,
      roleIds: roleIdsOf(member),
    });
  }

  /** Runs `task` in the thread's order (once per message id when `once` is given); failures are logged. */
  private queue(
    thread: ThreadRef,
    kind: string,
    messageId: string,
    once: DeliveryDedupe | undefined,
    task: () => Promise<unknown>,
  ): void {
    const run = () => this.serial.run(thread, task);
    (once ? once.run(messageId, run) : run()).catch((err: unknown) =>
      this.options.log.error(
        { err, kind, messageId, thread: thread.thread },
        "discord: event handling failed",
      ),
    );
  }
}
