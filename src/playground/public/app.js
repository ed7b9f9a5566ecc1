// The playground page: threads on the left, the selected thread on the right, live updates over
// Server-Sent Events. Plain DOM, no build step. All text from the server goes through escapeHtml or the
// safe Markdown renderer before it reaches innerHTML.
import { createAnnouncer, setUpMessageKeyboard } from "./a11y.js";
import { escapeHtml } from "./markdown.js";
import { clock, messageElement, renderBody, renderReactions, view } from "./render.js";

const USER_KEY = "threadline.playground.user";
const $ = (id) => document.getElementById(id);
// The page's state extends the renderer's view (bot info, who is looking), so both see the same values.
const state = Object.assign(view, { threads: [], current: undefined });
/** Reads new messages out to screen readers (the page's polite live region). */
const announcer = createAnnouncer(() => $("announcer"));

// ---------------------------------------------------------------- identity

function storedUser() {
  try {
    const user = JSON.parse(localStorage.getItem(USER_KEY) ?? "null");
    if (user && typeof user.id === "string" && typeof user.name === "string") return user;
  } catch {
    // A damaged entry: ask again.
  }
  return undefined;
}

function askName(previous) {
  const dialog = $("name-dialog");
  const input = $("name-input");
  input.value = previous?.name ?? "";
  dialog.showModal();
  return new Promise((resolve) => {
    $("name-form").onsubmit = (event) => {
      const name = input.value.trim();
      if (name === "") return event.preventDefault();
      const user = { id: previous?.id ?? `u-${crypto.randomUUID().slice(0, 13)}`, name };
      localStorage.setItem(USER_KEY, JSON.stringify(user));
      resolve(user);
    };
  });
}

function showMe() {
  $("me-name").textContent = state.me.name;
}

// ---------------------------------------------------------------- server

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error ?? `The server answered ${response.status}`);
  return data;
}

function attempt(action) {
  action().catch((err) => toast(err.message));
}

function toast(text) {
  const element = document.createElement("div");
  element.className = "toast";
  element.textContent = text;
  $("toasts").append(element);
  setTimeout(() => element.remove(), 6000);
}

// ---------------------------------------------------------------- formatting

function ago(ms) {
  const minutes = Math.round((Date.now() - ms) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  if (minutes < 24 * 60) return `${Math.round(minutes / 60)} h ago`;
  return new Date(ms).toLocaleDateString();
}

// ---------------------------------------------------------------- sidebar

function renderThreads() {
  const nav = $("threads");
  nav.replaceChildren(
    ...state.threads.map((thread) => {
      const link = document.createElement("button");
      link.type = "button";
      link.className = "thread-link";
      link.dataset.threadId = thread.id;
      link.setAttribute("aria-current", String(thread.id === state.current?.thread.id));
      link.innerHTML = `<span class="title">${escapeHtml(thread.title)}</span><span class="when">${ago(thread.lastActivity)}</span>`;
      link.onclick = () => {
        location.hash = thread.id;
        setDrawer(false);
      };
      return link;
    }),
  );
}

function touchThread(threadId, at) {
  const thread = state.threads.find((candidate) => candidate.id === threadId);
  if (!thread) return attempt(loadThreads);
  thread.lastActivity = Math.max(thread.lastActivity, at);
  state.threads.sort((a, b) => b.lastActivity - a.lastActivity);
  renderThreads();
}

async function loadThreads() {
  state.threads = (await api("GET", "/api/threads")).threads;
  renderThreads();
}

// ---------------------------------------------------------------- messages

function renderThread() {
  const current = state.current;
  $("empty").hidden = current !== undefined;
  $("mention").hidden = current !== undefined;
  $("input").placeholder = current
    ? "Reply — while the bot works, your reply steers it"
    : `Ask ${state.info.botName} to do something…`;
  $("thread-title").textContent = current ? current.thread.title : "New thread";
  $("thread-sub").textContent = current
    ? `Started by ${current.thread.createdBy.name} · ${clock(current.thread.createdAt)}`
    : `Your first message mentions @${state.info.botName}.`;
  const list = $("messages");
  for (const element of list.querySelectorAll(".msg")) element.remove();
  for (const message of current?.messages ?? []) list.append(messageElement(message));
  renderStatus();
  renderThreads();
  list.scrollTop = list.scrollHeight;
}

function renderStatus() {
  const status = state.current?.status ?? null;
  $("status").hidden = status === null;
  $("status-text").textContent = status === null ? "" : `${state.info.botName} ${status}`;
  const bots = document.querySelectorAll(".msg-bot");
  for (const element of bots) element.classList.remove("streaming");
  if (status !== null) bots[bots.length - 1]?.classList.add("streaming");
}

function find(id) {
  const message = state.current?.messages.find((candidate) => candidate.id === id);
  const element = document.querySelector(`.msg[data-message-id="${CSS.escape(id)}"]`);
  return { message, element };
}

// ---------------------------------------------------------------- live updates

function keepScrolled(update) {
  const list = $("messages");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 120;
  update();
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function apply(event) {
  if (event.type === "thread") {
    if (!state.threads.some((thread) => thread.id === event.thread.id)) state.threads.unshift(event.thread);
    return renderThreads();
  }
  if (event.type === "notice") return toast(event.text);
  if (event.type === "message") touchThread(event.thread, event.message.sentAt);
  // A thread whose snapshot is on its way: its events wait for it (the snapshot may predate them).
  if (state.loading?.id === event.thread) return state.loading.events.push(event);
  const current = state.current;
  if (!current || current.thread.id !== event.thread) return;
  keepScrolled(() => {
    if (event.type === "status") {
      current.status = event.status;
      if (event.status === null) announcer.settled((id) => find(id).element);
      return renderStatus();
    }
    if (event.type === "message") {
      if (find(event.message.id).message) return;
      current.messages.push(event.message);
      const element = messageElement(event.message);
      $("messages").append(element);
      if (event.message.author.id !== state.me.id)
        announcer.added(event.message, element, (current.status ?? null) !== null);
      return renderStatus();
    }
    const { message, element } = find(event.id);
    if (!message || !element)
      return event.type === "deleted" ? undefined : attempt(() => openThread(current.thread.id));
    if (event.type === "deleted") {
      current.messages.splice(current.messages.indexOf(message), 1);
      return element.remove();
    }
    if (event.type === "reaction") {
      updateReaction(message, event);
      return renderReactions(element, message);
    }
    message.text = event.text;
    message.editedAt = event.editedAt;
    if (event.type === "card") message.card = event.card;
    renderBody(element, message);
  });
}

function updateReaction(message, { emoji: name, user, added }) {
  let reaction = message.reactions.find((candidate) => candidate.emoji === name);
  if (added) {
    if (!reaction) {
      reaction = { emoji: name, users: [] };
      message.reactions.push(reaction);
    }
    if (!reaction.users.some((candidate) => candidate.id === user.id)) reaction.users.push(user);
  } else if (reaction) {
    reaction.users = reaction.users.filter((candidate) => candidate.id !== user.id);
    if (reaction.users.length === 0) message.reactions.splice(message.reactions.indexOf(reaction), 1);
  }
}

function connect() {
  const source = new EventSource(`/api/events?user=${encodeURIComponent(state.me.id)}`);
  // (Re)connected: anything may have been missed, so refetch what is shown.
  source.onopen = () => attempt(resync);
  source.onmessage = (message) => apply(JSON.parse(message.data));
}

async function resync() {
  await loadThreads();
  if (state.current) await openThread(state.current.thread.id);
}

/**
 * Shows thread `id` (none: the home view). Events for it that arrive while its snapshot loads are held and
 * applied after it, in order: each carries a new state, so applying one the snapshot already has is
 * harmless, while dropping one (the bot's "is thinking" just before its first post) would leave the page
 * wrong until the next event. Only the latest call shows its thread.
 */
let opens = 0;
async function openThread(id) {
  const loading = { id, events: [] };
  const opened = ++opens;
  state.loading = loading;
  let snapshot;
  try {
    snapshot = id ? await api("GET", `/api/threads/${encodeURIComponent(id)}`) : undefined;
  } finally {
    if (state.loading === loading) state.loading = undefined;
  }
  if (opened !== opens) return;
  const previous = state.current;
  state.current = snapshot;
  renderThread();
  const started = state.current !== undefined && state.started === state.current.thread.id;
  if (started) state.started = undefined;
  announcer.loaded(previous, state.current, {
    me: state.me.id,
    started,
    elementOf: (id) => find(id).element,
  });
  for (const event of loading.events) apply(event);
}

// ---------------------------------------------------------------- user actions

/**
 * An id for what is in the composer, sent with it: pressing Enter twice (the form submits even while the
 * send button is disabled) or a resent request posts it once. A new draft gets a new id.
 */
function newDraftId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
let draftId = newDraftId();

async function send(text) {
  const user = state.me;
  const sent = draftId;
  if (state.current) {
    const path = `/api/threads/${encodeURIComponent(state.current.thread.id)}/messages`;
    await api("POST", path, { user, text, draftId: sent });
    return;
  }
  const { thread } = await api("POST", "/api/threads", { user, text, draftId: sent });
  state.started = thread.id;
  location.hash = thread.id;
}

// ---------------------------------------------------------------- phone layout

/** Narrow screens: the thread list is a drawer the ☰ button opens; a thread, New thread or Escape closes it. */
function setDrawer(open) {
  document.body.classList.toggle("drawer-open", open);
  $("menu").setAttribute("aria-expanded", String(open));
  $("drawer-backdrop").hidden = !open;
}

function setUpDrawer() {
  $("menu").onclick = () => setDrawer(!document.body.classList.contains("drawer-open"));
  $("drawer-backdrop").onclick = () => setDrawer(false);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && document.body.classList.contains("drawer-open")) setDrawer(false);
  });
}

/** Without hover (touch), tapping a message shows its reaction toolbar; tapping elsewhere hides it. */
function toggleTapped(element) {
  for (const other of document.querySelectorAll(".msg.tapped"))
    if (other !== element) other.classList.remove("tapped");
  element?.classList.toggle("tapped");
}

function onMessagesClick(event) {
  const button = event.target.closest("button");
  if (!button && !event.target.closest("a, textarea, input")) toggleTapped(event.target.closest(".msg"));
  const element = button?.closest(".msg");
  if (!button || !element || !state.current) return;
  const threadPath = `/api/threads/${encodeURIComponent(state.current.thread.id)}`;
  const { message } = find(element.dataset.messageId);
  if (!message) return;
  const user = state.me;
  if (button.dataset.react) {
    const name = button.dataset.react;
    const mine = message.reactions.some((r) => r.emoji === name && r.users.some((u) => u.id === user.id));
    const path = `${threadPath}/messages/${encodeURIComponent(message.id)}/reactions`;
    attempt(() => api("POST", path, { user, emoji: name, added: !mine }));
  } else if (button.dataset.decision) {
    const path = `${threadPath}/approvals/${encodeURIComponent(button.dataset.approval)}`;
    attempt(async () => {
      const { reply } = await api("POST", path, { user, decision: button.dataset.decision });
      if (reply.kind === "notice") toast(reply.text);
    });
  } else if (button.dataset.denyReason !== undefined) {
    askDenyReason(button, `${threadPath}/approvals/${encodeURIComponent(button.dataset.approval)}`);
  } else if (button.dataset.editApproval !== undefined) {
    askEditedArguments(button, `${threadPath}/approvals/${encodeURIComponent(button.dataset.approval)}`);
  } else if (button.dataset.edit !== undefined) {
    startEdit(element, message, `${threadPath}/messages/${encodeURIComponent(message.id)}`);
  } else if (button.dataset.delete !== undefined && confirm("Delete this message?")) {
    attempt(() => api("DELETE", `${threadPath}/messages/${encodeURIComponent(message.id)}`, { user }));
  }
}

// A small form in place of the card's buttons: the reason reaches the model ("Tool call denied by …: <reason>").
function askDenyReason(button, path) {
  const row = button.closest(".card-buttons");
  const form = document.createElement("div");
  form.className = "edit-box deny-reason";
  form.innerHTML =
    '<textarea rows="2" maxlength="500" aria-label="Reason for denying" placeholder="Why? The agent reads this."></textarea><div><button type="button" class="deny">Deny</button><button type="button" class="link">Cancel</button></div>';
  row.replaceWith(form);
  const input = form.querySelector("textarea");
  input.focus();
  const [deny, cancel] = form.querySelectorAll("button");
  cancel.onclick = () => form.replaceWith(row);
  deny.onclick = () =>
    attempt(async () => {
      const { reply } = await api("POST", path, { user: state.me, decision: "deny", reason: input.value });
      if (reply.kind === "notice") toast(reply.text);
    });
}

// Edit and approve: the call's arguments as JSON in place of the buttons; the gateway validates them against
// the tool's schema, and an invalid edit is shown here (the card stays pending) until a valid one runs.
function askEditedArguments(button, path) {
  const row = button.closest(".card-buttons");
  attempt(async () => {
    const { form: opened } = await api("POST", `${path}/form`, { user: state.me });
    if (opened.kind === "notice") {
      toast(opened.text);
      return;
    }
    const form = document.createElement("div");
    form.className = "edit-box edit-approval";
    form.innerHTML =
      '<textarea rows="6" maxlength="20000" aria-label="Arguments (JSON)" spellcheck="false"></textarea><p class="form-error" role="alert" hidden></p><div><button type="button" class="approve">Approve with these arguments</button><button type="button" class="link">Cancel</button></div>';
    row.replaceWith(form);
    const input = form.querySelector("textarea");
    const error = form.querySelector(".form-error");
    input.value = opened.argumentsJson;
    input.focus();
    const [approve, cancel] = form.querySelectorAll("button");
    cancel.onclick = () => form.replaceWith(row);
    approve.onclick = () =>
      attempt(async () => {
        const body = { user: state.me, decision: "approve", editedArguments: input.value };
        const { reply } = await api("POST", path, body);
        error.hidden = reply.kind !== "invalid";
        if (reply.kind === "invalid") error.textContent = reply.text;
        else if (reply.kind === "notice") toast(reply.text);
      });
  });
}

function startEdit(element, message, path) {
  const body = element.querySelector(".text");
  body.innerHTML =
    '<div class="edit-box"><textarea rows="3" aria-label="Edit message"></textarea><div><button type="button" class="primary">Save</button><button type="button" class="link">Cancel</button></div></div>';
  const input = body.querySelector("textarea");
  input.value = message.text;
  input.focus();
  const [save, cancel] = body.querySelectorAll("button");
  cancel.onclick = () => renderBody(element, message);
  save.onclick = () => attempt(() => api("PATCH", path, { user: state.me, text: input.value }));
}

function setUpComposer() {
  const input = $("input");
  const resize = () => {
    input.style.height = "auto";
    input.style.height = `${input.scrollHeight}px`;
  };
  input.addEventListener("input", () => {
    draftId = newDraftId();
    resize();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value;
    if (text.trim() === "") return;
    $("send").disabled = true;
    send(text)
      .then(() => {
        input.value = "";
        draftId = newDraftId();
        resize();
      })
      .catch((err) => toast(err.message))
      .finally(() => {
        $("send").disabled = false;
        input.focus();
      });
  });
}

async function main() {
  state.info = await api("GET", "/api/info");
  if (state.info.notice) {
    // Setting names (and NAME=value examples) in code style, so what to type stands out.
    $("banner").innerHTML =
      `⚠️ ${escapeHtml(state.info.notice).replace(/\b[A-Z][A-Z0-9_]{3,}(?:=[^\s,)]+)?/g, "<code>$&</code>")}`;
    $("banner").hidden = false;
  }
  $("mention").textContent = `@${state.info.botName}`;
  state.me = storedUser() ?? (await askName(undefined));
  showMe();
  $("rename").onclick = async () => {
    state.me = await askName(state.me);
    showMe();
  };
  $("new-thread").onclick = () => {
    location.hash = "";
    setDrawer(false);
    $("input").focus();
  };
  setUpDrawer();
  $("messages").addEventListener("click", onMessagesClick);
  setUpMessageKeyboard($("messages"));
  setUpComposer();
  window.addEventListener("hashchange", () => attempt(() => openThread(location.hash.slice(1))));
  await loadThreads();
  await openThread(location.hash.slice(1));
  connect();
  $("input").focus();
}

main().catch((err) => toast(`The playground could not start: ${err.message}`));
