/** One interaction the fake sent (a button click) and how the bot answered it. */
export interface FakeInteraction {
  id: string;
  token: string;
  userId: string;
  messageId: string;
  customId: string;
  /** `Date.now()` when INTERACTION_CREATE was dispatched. */
  createdAt: number;
  /** The callback the bot sent in time: its type (6 = deferred update) and when. */
  callback?: { type: number; at: number };
  /** Callback attempts Discord refused (too late: 10062; twice: 40060). */
  rejectedCallbacks: { code: number; at: number }[];
  /** Follow-up messages (interaction webhooks), with their flags (64 = ephemeral). */
  followUps: { content: string; flags: number; at: number }[];
}
