// Screen-reader and keyboard support for the message list: a polite live region that announces new
// messages, and one Tab stop for the whole list (a roving tabindex) instead of every toolbar button of
// every message. Approval-card buttons always stay in the Tab order: they are what a run waits for.

/** The accessible text of a rendered message body, without the run footer; at most 400 characters. */
export function spokenText(element) {
  const body = element?.querySelector(".text");
  if (!body) return "";
  const copy = body.cloneNode(true);
  for (const footer of copy.querySelectorAll(".subtext")) footer.remove();
  const text = (copy.textContent ?? "").replace(/\s+/g, " ").trim();
  return text.length <= 400 ? text : `${text.slice(0, 399)}…`;
}

/** Announces `text` politely through `region` (an `aria-live="polite"` element); keeps the last five. */
export function announce(region, text) {
  if (!text) return;
  const line = document.createElement("p");
  line.textContent = text;
  region.append(line);
  while (region.childElementCount > 5) region.firstElementChild.remove();
}

/**
 * Announces other people's new messages through the live region `region()` returns: an approval card at
 * once ("Threadline asks for approval to run deploy"), a person's message at once ("Ana: …"), a bot reply
 * posted while its run streams only when the run settles (`settled`), with its final text, so a streaming
 * answer is read once and not at every edit.
 */
export function createAnnouncer(region) {
  const waiting = new Map();
  const say = (text) => announce(region(), text);
  return {
    /** A message arrived (not the viewer's own); `running`: a run is streaming in the thread now. */
    added(message, element, running) {
      if (message.card)
        return say(`${message.author.name} asks for approval to run ${message.card.toolName}`);
      if (message.kind !== "user" && running) return waiting.set(message.id, message.author.name);
      say(`${message.author.name}: ${spokenText(element)}`);
    },
    /** The run settled: reads the replies it posted; `elementOf(id)` finds a message's element. */
    settled(elementOf) {
      for (const [id, author] of waiting) {
        const element = elementOf(id);
        if (element) say(`${author}: ${spokenText(element)}`);
      }
      waiting.clear();
    },
    /**
     * A thread was (re)loaded (`previous` and `current` are thread snapshots, either may be undefined). In
     * the same thread (a resync) or one the page just `started` (the bot may have answered before it
     * loaded), others' messages that were not on screen are read; another thread starts silent.
     */
    loaded(previous, current, { me, started, elementOf }) {
      const same = current !== undefined && previous?.thread.id === current.thread.id;
      if (!same) waiting.clear();
      if (!same && !started) return;
      const known = new Set(same ? previous.messages.map((message) => message.id) : []);
      const running = (current.status ?? null) !== null;
      for (const message of current.messages)
        if (!known.has(message.id) && message.author.id !== me)
          this.added(message, elementOf(message.id), running);
      if (!running) this.settled(elementOf);
    },
  };
}

const MOVES = { ArrowUp: -1, ArrowDown: 1, Home: -Infinity, End: Infinity };
const TOOLBAR_MOVES = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity };

/**
 * Makes `list` one Tab stop: the active message (the one focused, else the newest) has tabindex 0,
 * every other message, reaction button and toolbar button -1. In the active message the toolbar is one
 * stop too (its first button); ArrowLeft/ArrowRight move inside it, ArrowUp/ArrowDown/Home/End move
 * between messages. Re-applies itself whenever the list's content changes.
 */
export function setUpMessageKeyboard(list) {
  let active;
  let scheduled = false;
  const messages = () => [...list.querySelectorAll(".msg")];

  const sync = () => {
    scheduled = false;
    const all = messages();
    // Until the keyboard is in the list, the stop is the newest message (what just arrived).
    if (!all.includes(active) || !list.contains(document.activeElement)) active = all.at(-1);
    for (const message of all) {
      const current = message === active;
      message.tabIndex = current ? 0 : -1;
      for (const button of message.querySelectorAll(".reactions button")) button.tabIndex = current ? 0 : -1;
      const tools = [...message.querySelectorAll(".actions button")];
      const stop = tools.find((button) => button.tabIndex === 0) ?? tools[0];
      for (const button of tools) button.tabIndex = current && button === stop ? 0 : -1;
    }
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(sync);
  };

  new MutationObserver(schedule).observe(list, { childList: true, subtree: true });
  list.addEventListener("focusin", (event) => {
    const message = event.target.closest(".msg");
    if (message && message !== active) {
      active = message;
      sync();
    }
  });
  list.addEventListener("focusout", (event) => {
    if (!list.contains(event.relatedTarget)) schedule();
  });
  list.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const toolbar = event.target.closest(".actions");
    if (toolbar && event.key in TOOLBAR_MOVES) {
      const tools = [...toolbar.querySelectorAll("button")];
      const next = tools[clamp(tools.indexOf(event.target) + TOOLBAR_MOVES[event.key], tools.length)];
      for (const button of tools) button.tabIndex = button === next ? 0 : -1;
      next?.focus();
      event.preventDefault();
      return;
    }
    if (!event.target.classList.contains("msg") || !(event.key in MOVES)) return;
    const all = messages();
    const next = all[clamp(all.indexOf(event.target) + MOVES[event.key], all.length)];
    if (next) {
      active = next;
      sync();
      next.focus();
      event.preventDefault();
    }
  });
  sync();
}

function clamp(index, length) {
  return Math.max(0, Math.min(length - 1, Number.isFinite(index) ? index : index < 0 ? 0 : length - 1));
}
