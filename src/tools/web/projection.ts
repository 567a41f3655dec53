import type TurndownService from "turndown";

/**
 * What the model reads of a fetched body: a bounded text projection. HTML becomes Markdown
 * (turndown over its bundled DOM parser, with scripts, styles and other inert or active
 * non-content elements removed); JSON, XML and plain text pass as text; anything else is
 * described, never dumped. The raw bytes are kept as an artifact, so nothing is lost here.
 */

/** The largest projection in characters: the runtime's preview limit may cut it further. */
export const MAX_PROJECTION_CHARS = 100_000;

export type BodyKind = "html" | "text" | "binary";

export interface Projection {
  kind: BodyKind;
  text: string;
  /** The projection was cut at `MAX_PROJECTION_CHARS`. */
  cut: boolean;
}

/** Elements whose content is never page text: code, styling, embedded documents, forms' internals. */
const REMOVED = [
  "script",
  "style",
  "noscript",
  "template",
  "iframe",
  "object",
  "embed",
  "head",
  "title",
  "svg",
  "canvas",
];

let converter: Promise<TurndownService> | undefined;

/** Loaded on the first page: a session that fetches no HTML never pays for the DOM parser. */
function turndown(): Promise<TurndownService> {
  converter ??= import("turndown").then(({ default: Turndown }) => {
    const service = new Turndown({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
    service.remove(REMOVED as TurndownService.TagName[]);
    return service;
  });
  return converter;
}

/** HTML as Markdown, scripts and styles stripped. */
export async function htmlToMarkdown(html: string): Promise<string> {
  // Turndown parses with its own DOM (domino) and never runs a script or loads a resource.
  return (await turndown())
    .turndown(html)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** The media type of a Content-Type header, lowercased, without parameters. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** Which kind of body this is: by its declared type, then (undeclared or generic) by its bytes. */
export function bodyKind(contentType: string | undefined, body: Uint8Array): BodyKind {
  const type = mediaType(contentType);
  if (type === "text/html" || type === "application/xhtml+xml") return "html";
  if (
    type.startsWith("text/") ||
    type === "application/json" ||
    type.endsWith("+json") ||
    type === "application/xml" ||
    type.endsWith("+xml") ||
    type === "application/javascript" ||
    type === "application/x-ndjson" ||
    type === "application/yaml"
  ) {
    return "text";
  }
  if (type === "" || type === "application/octet-stream") return looksLikeText(body) ? "text" : "binary";
  return "binary";
}

/** Valid UTF-8 with no NUL in its first 8 KiB. */
function looksLikeText(body: Uint8Array): boolean {
  const head = body.subarray(0, 8192);
  if (head.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head.subarray(0, safeCut(head)));
    return true;
  } catch {
    return false;
  }
}

/** A length that does not end inside a UTF-8 sequence. */
function safeCut(bytes: Uint8Array): number {
  let end = bytes.byteLength;
  let back = 0;
  while (end > 0 && back < 3 && ((bytes[end - 1] ?? 0) & 0xc0) === 0x80) {
    end -= 1;
    back += 1;
  }
  if (end > 0 && ((bytes[end - 1] ?? 0) & 0xc0) === 0xc0) end -= 1;
  return end;
}

/** Decode by the header's charset, UTF-8 when it names none or one this runtime does not know. */
export function decodeText(contentType: string | undefined, body: Uint8Array): string {
  const charset = /charset\s*=\s*"?([A-Za-z0-9._:-]+)"?/i.exec(contentType ?? "")?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}

/** The projection of a body the model reads. */
export async function projectBody(contentType: string | undefined, body: Uint8Array): Promise<Projection> {
  const kind = bodyKind(contentType, body);
  if (kind === "binary") {
    const type = mediaType(contentType) || "no content type";
    return {
      kind,
      text: `[binary body (${type}, ${body.byteLength} bytes): not shown; the raw bytes are in the artifact]`,
      cut: false,
    };
  }
  const decoded = decodeText(contentType, body);
  const text = kind === "html" ? await htmlToMarkdown(decoded) : decoded;
  if (text.length <= MAX_PROJECTION_CHARS) return { kind, text, cut: false };
  return { kind, text: text.slice(0, MAX_PROJECTION_CHARS), cut: true };
}
