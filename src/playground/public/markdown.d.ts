/** Escapes text for use in HTML content and quoted attribute values. */
export declare function escapeHtml(text: string): string;
/** Renders Markdown to HTML that is safe to assign to `innerHTML`. */
export declare function renderMarkdown(source: string): string;
