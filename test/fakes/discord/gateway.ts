import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { shardOf } from "./snowflake.js";
import type { DiscordState } from "./state.js";

/** Gateway intents the fake checks (Discord's bit values). */
export const INTENT = {
  guilds: 1 << 0,
  guildMessages: 1 << 9,
  guildMessageReactions: 1 << 10,
  directMessages: 1 << 12,
  directMessageReactions: 1 << 13,
  messageContent: 1 << 15,
} as const;

/** Where a dispatch goes: a guild's shard, or shard 0 for DMs and everything global. */
export type DispatchTarget = { guildId: string } | { dm: true };

/** One identified gateway session. */
export interface FakeSession {
  id: string;
  shard: [number, number];
  intents: number;
  seq: number;
  /** Every dispatch sent in this session, for resumes. */
  events: { s: number; t: string; d: unknown }[];
  socket: WebSocket | undefined;
  resumes: number;
}

/**
 * Discord's gateway (v10, JSON, no compression) on the fake's HTTP server: hello, identify → READY and
 * GUILD_CREATE for the shard's guilds, heartbeats and acks, resume with replay of missed dispatches,
 * invalid sessions, routing by shard, and intent filtering (message content only with the privileged
 * intent, unless the bot is mentioned or the message is a DM or the bot's own).
 */
export class FakeGateway {
  readonly sessions = new Map<string, FakeSession>();
  /** Sessions identified so far (with their shard), in order. */
  readonly identifies: { shard: [number, number]; intents: number }[] = [];
  heartbeats = 0;
  /** When set, the next resume replays from this sequence number instead of the client's (a replay). */
  replayFrom: number | undefined;
  private readonly server = new WebSocketServer({ noServer: true });
  private nextSession = 1;

  constructor(
    private readonly state: DiscordState,
    private readonly token: string,
    private readonly heartbeatIntervalMs: number,
    private readonly url: () => string,
    private readonly onChange: () => void,
  ) {
    this.server.on("connection", (socket: WebSocket) => this.connected(socket));
  }

  /** Takes over WebSocket upgrades of `server` on `/gateway`. */
  attach(server: Server): void {
    server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (!(request.url ?? "").startsWith("/gateway")) {
        socket.destroy();
        return;
      }
      this.server.handleUpgrade(request, socket, head, (ws) => this.server.emit("connection", ws, request));
    });
  }

  /** Sends a dispatch to every session that should see it; missed ones are replayed on resume. */
  dispatch(event: string, data: Record<string, unknown>, target: DispatchTarget): void {
    for (const session of this.sessions.values()) {
      const [shard, count] = session.shard;
      const owns = "dm" in target ? shard === 0 : shardOf(target.guildId, count) === shard;
      if (!owns || !this.wants(session.intents, event, target)) continue;
      this.send(session, event, this.filtered(session.intents, event, data, target));
    }
  }

  /** Closes every connection with `code` (4000: the client resumes; 1000: it identifies anew). */
  disconnectAll(code = 4000): void {
    for (const session of this.sessions.values()) session.socket?.close(code, "fake discord: disconnect");
  }

  close(): void {
    for (const client of this.server.clients) client.terminate();
    this.server.close();
  }

  private connected(socket: WebSocket): void {
    let session: FakeSession | undefined;
    socket.send(
      JSON.stringify({ op: 10, d: { heartbeat_interval: this.heartbeatIntervalMs }, s: null, t: null }),
    );
    socket.on("message", (raw) => {
      let payload: { op: number; d: Record<string, unknown> | number | null };
      try {
        payload = JSON.parse(String(raw));
      } catch {
        socket.close(4002, "Decode error");
        return;
      }
      const d = (payload.d ?? {}) as Record<string, unknown>;
      switch (payload.op) {
        case 1:
          this.heartbeats++;
          socket.send(JSON.stringify({ op: 11 }));
          break;
        case 2:
          if (d.token !== this.token) return socket.close(4004, "Authentication failed");
          session = this.identify(socket, d);
          break;
        case 6:
          session = this.resume(socket, d);
          break;
        default:
          break;
      }
      this.onChange();
    });
    socket.on("close", () => {
      if (session?.socket === socket) session.socket = undefined;
    });
  }

  private identify(socket: WebSocket, d: Record<string, unknown>): FakeSession {
    const shard = (d.shard as [number, number] | undefined) ?? [0, 1];
    const session: FakeSession = {
      id: `session-${this.nextSession++}`,
      shard,
      intents: Number(d.intents ?? 0),
      seq: 0,
      events: [],
      socket,
      resumes: 0,
    };
    this.sessions.set(session.id, session);
    this.identifies.push({ shard, intents: session.intents });
    const guilds = [...this.state.guilds.keys()].filter((id) => shardOf(id, shard[1]) === shard[0]);
    this.send(session, "READY", {
      v: 10,
      user: this.state.apiUser(this.state.bot.id),
      guilds: guilds.map((id) => ({ id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.url(),
      shard,
      application: { id: this.state.applicationId, flags: 0 },
      private_channels: [],
      relationships: [],
      user_settings: {},
      presences: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
      session_type: "normal",
      auth: {},
    });
    for (const id of guilds) this.send(session, "GUILD_CREATE", this.state.apiGuild(id));
    return session;
  }

  private resume(socket: WebSocket, d: Record<string, unknown>): FakeSession | undefined {
    const session = this.sessions.get(String(d.session_id));
    if (!session || d.token !== this.token) {
      socket.send(JSON.stringify({ op: 9, d: false }));
      return undefined;
    }
    session.socket = socket;
    session.resumes++;
    const from = Math.min(Number(d.seq ?? 0), (this.replayFrom ?? Number.POSITIVE_INFINITY) - 1);
    this.replayFrom = undefined;
    for (const event of session.events.filter((e) => e.s > from)) {
      socket.send(JSON.stringify({ op: 0, s: event.s, t: event.t, d: event.d }));
    }
    this.send(session, "RESUMED", {});
    return session;
  }

  private send(session: FakeSession, t: string, d: unknown): void {
    session.seq++;
    const event = { s: session.seq, t, d };
    session.events.push(event);
    if (session.events.length > 2000) session.events.shift();
    if (session.socket?.readyState === 1) session.socket.send(JSON.stringify({ op: 0, ...event }));
  }

  private wants(intents: number, event: string, target: DispatchTarget): boolean {
    const dm = "dm" in target;
    if (event.startsWith("MESSAGE_REACTION")) {
      return (intents & (dm ? INTENT.directMessageReactions : INTENT.guildMessageReactions)) !== 0;
    }
    if (event.startsWith("MESSAGE_"))
      return (intents & (dm ? INTENT.directMessages : INTENT.guildMessages)) !== 0;
    if (event.startsWith("THREAD_") || event.startsWith("CHANNEL_") || event.startsWith("GUILD_")) {
      return (intents & INTENT.guilds) !== 0;
    }
    return true;
  }

  /** Without the Message Content intent, guild messages arrive without content unless they concern the bot. */
  private filtered(intents: number, event: string, data: Record<string, unknown>, target: DispatchTarget) {
    if ((event !== "MESSAGE_CREATE" && event !== "MESSAGE_UPDATE") || "dm" in target) return data;
    if ((intents & INTENT.messageContent) !== 0) return data;
    const botId = this.state.bot.id;
    const author = (data.author as { id?: string } | undefined)?.id;
    if (author === botId || String(data.content ?? "").includes(`<@${botId}>`)) return data;
    return { ...data, content: "", embeds: [], attachments: [], components: [] };
  }
}
