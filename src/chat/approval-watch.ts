import type {
  ApprovalCard,
  ApprovalShown,
  ChatOutbound,
  PostedMessage,
  ReplyPart,
  ThreadRef,
} from "./types.js";

/**
 * Wraps `outbound` so that approval cards posted or updated through the wrapper are announced to its
 * {@link ChatOutbound.watchApprovals} listeners (after the platform call resolved; a rejected call
 * announces nothing). Everything else is passed through unchanged, `limits`, `dialect` and `toolTasks` included.
 * Create one per run: the run's renderer and its approval gate then share it, and the renderer learns
 * when a card appears (to continue its reply below the card and say whose approval the run waits for).
 * Listeners run synchronously in subscription order; one that throws is ignored.
 */
export function watchApprovals(outbound: ChatOutbound): ChatOutbound {
  const listeners = new Set<(shown: ApprovalShown) => void>();
  const announce = (shown: ApprovalShown): void => {
    for (const listener of [...listeners]) {
      try {
        listener(shown);
      } catch {
        // Listeners must not throw; a broken one must not fail the card.
      }
    }
  };
  const copy = (card: ApprovalCard): ApprovalCard => ({ ...card, state: { ...card.state } });
  const wrapped: ChatOutbound = {
    limits: outbound.limits,
    dialect: outbound.dialect,
    post: (thread: ThreadRef, text: string, parts?: ReplyPart[]): Promise<PostedMessage> =>
      parts === undefined ? outbound.post(thread, text) : outbound.post(thread, text, parts),
    edit: (thread: ThreadRef, messageId: string, text: string, parts?: ReplyPart[]) =>
      parts === undefined
        ? outbound.edit(thread, messageId, text)
        : outbound.edit(thread, messageId, text, parts),
    delete: (thread, messageId) => outbound.delete(thread, messageId),
    react: (thread, messageId, emoji) => outbound.react(thread, messageId, emoji),
    unreact: (thread, messageId, emoji) => outbound.unreact(thread, messageId, emoji),
    setStatus: (thread, status) => outbound.setStatus(thread, status),
    endRun: (thread) => outbound.endRun(thread),
    async postApproval(thread, card) {
      const posted = await outbound.postApproval(thread, card);
      announce({ thread, messageId: posted.id, card: copy(card) });
      return posted;
    },
    async updateApproval(thread, messageId, card) {
      await outbound.updateApproval(thread, messageId, card);
      announce({ thread, messageId, card: copy(card) });
    },
    notify: (thread, userId, text) => outbound.notify(thread, userId, text),
    watchApprovals(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  if (outbound.toolTasks !== undefined) Object.assign(wrapped, { toolTasks: outbound.toolTasks });
  const { postNotifying } = outbound;
  if (postNotifying) wrapped.postNotifying = (...args) => postNotifying.apply(outbound, args);
  const { settled } = outbound;
  if (settled) wrapped.settled = () => settled.apply(outbound);
  return wrapped;
}
