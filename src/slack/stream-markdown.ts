/**
 * Converts Slack mrkdwn (what `SLACK_DIALECT` produces) into the Markdown that
 * Slack's streaming API (`chat.startStream` / `chat.appendStream`, `markdown_text`) renders: `*bold*` →
 * `**bold**`, `~strike~` → `~~strike~~`, `<url|label>` → `[label](url)`, `<url>` → `url`, and the `&amp;`
 * / `&lt;` / `&gt;` entities back to characters (in code too). User, channel and date tokens (`<@U1>`,
 * `<#C1>`, `<!date…>`) are kept; zero-width spaces outside code are dropped. Code spans and fenced blocks are otherwise left alone. Pure; never throws.
 */
export function mrkdwnToStreamMarkdown(mrkdwn: string): string {
  const out: string[] = [];
  let inFence = false;
  for (const line of mrkdwn.split("\n")) {
    if (line.startsWith("```")) {
      inFence = !inFence;
      out.push(line);
      continue;
    }
    out.push(inFence ? decodeEntities(line) : convertLine(line));
  }
  return out.join("\n");
}

function convertLine(line: string): string {
  // Split on inline code spans so their content is only unescaped.
  return line
    .split(/(`[^`]*`)/)
    .map((part, index) => (index % 2 === 1 ? decodeEntities(part) : convertText(part)))
    .join("");
}

function convertText(text: string): string {
  return decodeEntities(
    text
      // slackify-markdown pads emphasis with zero-width spaces so mrkdwn sees word boundaries.
      .replaceAll("\u200b", "")
      .replace(
        /<((?:https?|mailto):[^|>]+)\|([^>]+)>/g,
        (_m, url: string, label: string) => `[${label}](${url})`,
      )
      .replace(/<((?:https?|mailto):[^|>]+)>/g, (_m, url: string) => url)
      .replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?![\w*])/g, (_m, before: string, body: string) => {
        return `${before}**${body}**`;
      })
      .replace(/(^|[^\w~])~(?=\S)([^~\n]*?\S)~(?![\w~])/g, (_m, before: string, body: string) => {
        return `${before}~~${body}~~`;
      }),
  );
}

function decodeEntities(text: string): string {
  return text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}
