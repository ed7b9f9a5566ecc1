// How one message looks: author line, Markdown body or approval card, reactions and the hover toolbar.
// Everything from the server passes through escapeHtml or the safe Markdown renderer.
import { escapeHtml, renderMarkdown } from "./markdown.js";

/** What rendering needs to know: the bot's info (names, emoji, reactions) and who is looking (`me`). */
export const view = { info: undefined, me: undefined };

/** A short local time. */
export const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

const emoji = (name) => view.info.emoji[name] ?? `:${name}:`;

export function messageElement(message) {
  const element = document.createElement("article");
  element.className = `msg msg-${message.kind}`;
  element.dataset.messageId = message.id;
  element.dataset.kind = message.kind;
  const bot = message.kind !== "user";
  element.innerHTML = `
    <div class="avatar" aria-hidden="true">${escapeHtml(message.author.name.slice(0, 1).toUpperCase())}</div>
    <div class="content">
      <header><span class="author">${escapeHtml(message.author.name)}</span>${bot ? '<span class="badge">bot</span>' : ""}
        <time>${clock(message.sentAt)}</time><span class="edited"></span></header>
      <div class="text"></div>
      <div class="reactions"></div>
    </div>
    <div class="actions" role="toolbar" aria-label="Message actions">${actionButtons(message)}</div>`;
  renderBody(element, message);
  renderReactions(element, message);
  return element;
}

/** The reactions people set, from the server's reaction table: on user messages, or on any message. */
function actionButtons(message) {
  const react = (name, label) =>
    `<button type="button" data-react="${escapeHtml(name)}" title="${escapeHtml(label)}" aria-label="React ${emoji(name)} ${escapeHtml(label)}">${emoji(name)}</button>`;
  let html = "";
  for (const [role, { setBy }] of Object.entries(view.info.roles)) {
    if (setBy === "bot" || (setBy.on === "user" && message.kind !== "user")) continue;
    const name = view.info.reactions[role];
    if (name) html += react(name, setBy.label);
  }
  if (message.kind === "user" && message.author.id === view.me.id) {
    html += '<button type="button" data-edit title="Edit" aria-label="Edit message">✏️</button>';
    html += '<button type="button" data-delete title="Delete" aria-label="Delete message">🗑️</button>';
  }
  return html;
}

export function renderBody(element, message) {
  const body = element.querySelector(".text");
  if (message.card) body.innerHTML = cardHtml(message.card);
  else {
    const mention = message.mentionsBot
      ? `<span class="mention-tag">@${escapeHtml(view.info.botName)}</span> `
      : "";
    body.innerHTML = renderMarkdown(message.text).replace(/^<p>/, `<p>${mention}`) || mention;
  }
  element.querySelector(".edited").textContent =
    message.editedAt && message.kind === "user" ? "(edited)" : "";
}

/** The requester's name as cards show it (cards stored before it existed have none). */
const requesterOf = (card) => (card.requesterName?.trim() ? card.requesterName : "the requester");

function cardHtml(card) {
  const s = card.state;
  const tool = `<code>${escapeHtml(card.toolName)}</code>`;
  let html = `<div class="card ${s.kind}"><div class="card-title">🔐 ${s.kind === "pending" ? "Approval needed" : "Approval"} to run ${tool}</div>`;
  html += `<pre>${escapeHtml(card.argumentsText)}</pre>`;
  const by = (user) => escapeHtml(user.name);
  switch (s.kind) {
    case "pending": {
      const who = card.approvers.length > 0 ? `${escapeHtml(card.approvers.join(", "))} can decide · ` : "";
      html += `<p class="card-meta">${who}${card.expiresAt > 0 ? `expires at ${clock(card.expiresAt)}` : "no time limit"}</p>`;
      if (s.waitingMessages > 0)
        html += `<p class="card-meta">⏳ ${s.waitingMessages} ${s.waitingMessages === 1 ? "message" : "messages"} waiting for this decision</p>`;
      const id = escapeHtml(card.approvalId);
      html += `<div class="card-buttons">
        <button type="button" class="approve" data-approval="${id}" data-decision="approve">Approve</button>
        <button type="button" class="deny" data-approval="${id}" data-decision="deny">Deny</button>
        <button type="button" class="link" data-approval="${id}" data-deny-reason>Deny with reason…</button>
        <button type="button" class="link" data-approval="${id}" data-edit-approval>Edit and approve…</button>
        <button type="button" class="always" data-approval="${id}" data-decision="always">Always allow ${tool} for ${escapeHtml(requesterOf(card))} in this thread</button>
      </div>`;
      // The wider grant sits on its own row, styled as secondary (the runs layer accepts it from approvers only).
      // Cards stored before requesterName existed list the requester first.
      const requester = card.requesterName ?? card.approvers[0];
      if (card.approvers.some((name) => name !== requester))
        html += `<div class="card-buttons card-buttons-secondary">
        <button type="button" class="always-thread" data-approval="${id}" data-decision="alwaysThread">Always allow ${tool} for everyone here (approvers)</button>
      </div>`;
      break;
    }
    case "approved": {
      const whom = (s.scope ?? "requester") === "thread" ? "everyone" : escapeHtml(requesterOf(card));
      html += `<p class="card-decision">✅ ${s.always ? `Always allowed ${tool} for ${whom} in this thread` : "Approved"} by ${by(s.by)} · ${clock(s.at)}</p>`;
      // Edit and approve: what the approver changed, one "field: before → after" line each.
      if (s.changes?.length)
        html += `<p class="card-meta">✏️ Edited before approval:</p><ul class="card-changes">${s.changes.map((change) => `<li><code>${escapeHtml(change)}</code></li>`).join("")}</ul>`;
      break;
    }
    case "denied":
      html += `<p class="card-decision">❌ Denied by ${by(s.by)} · ${clock(s.at)}</p>`;
      if (s.reason) html += `<p class="card-meta">Reason: ${escapeHtml(s.reason)}</p>`;
      break;
    case "expired":
      html += `<p class="card-decision">⌛ Denied: approval timed out · ${clock(s.at)}</p>`;
      break;
    default:
      html += `<p class="card-decision">🚫 Cancelled: ${escapeHtml(s.reason ?? "")}</p>`;
  }
  return `${html}</div>`;
}

export function renderReactions(element, message) {
  element.querySelector(".reactions").innerHTML = message.reactions
    .map(({ emoji: name, users }) => {
      const mine = users.some((user) => user.id === view.me.id);
      const who = escapeHtml(users.map((user) => user.name).join(", "));
      return `<button type="button" class="reaction${mine ? " mine" : ""}" data-react="${escapeHtml(name)}" data-emoji="${escapeHtml(name)}" title="${who}">${emoji(name)} <span>${users.length}</span></button>`;
    })
    .join("");
}
