/**
 * A recalled memory as the recall stages hand it on: its URI, its text (untrusted, bounded), and what the
 * server said of it. The context face and the recall endpoint list them as `entries`; a server that sends
 * only its rendered text (`<memory uri=… type=… score=… detail=…>text</memory>` elements, its render.py
 * format) is read back into the same list; the full output format renders them that way again.
 */

import * as z from "zod/mini";

/** One memory (every string in it is the server's, untrusted). */
export interface Memory {
  uri: string;
  text: string;
  score?: number;
  /** The server's category (`preferences`, `events`, …) or, from find, the bucket (`memory`, `skill`). */
  category?: string;
  /** How much of it the text is: `abstract`, `overview` or `full` (the context face's tiers). */
  detail?: string;
}

/** A URI in the user's or an agent's memory space (`…/memories` and below). */
const MEMORY_SPACE = /\/memories(?:\/|$)/;

/** The names OpenViking gives a directory's own summaries: its L0 abstract and L1 overview. */
const SUMMARY_FILE = /\/\.(?:abstract|overview)\.md$/;

/**
 * Whether a recalled URI of the memory space is a folder's summary rather than a memory, by the server's own
 * marks: find names such a hit by its sidecar (`…/.overview.md` at level 1, `…/.abstract.md` at level 0);
 * the context face and the recall endpoint name the directory itself and send no level or leaf field; and
 * a memory is a `.md` file other than those two — the rule OpenViking's memory code lists leaves by.
 */
export function isFolderSummary(uri: string): boolean {
  return MEMORY_SPACE.test(uri) && (SUMMARY_FILE.test(uri) || !uri.endsWith(".md"));
}

/** Most memories taken from one reply (a server may send thousands). */
const MAX_MEMORIES = 50;

/** Longest memory text kept (more than any output format prints of one memory). */
export const MAX_MEMORY_TEXT = 4000;

/** Longest URI kept: a longer one is not a memory anyone can read back, and is dropped. */
const MAX_URI = 300;

const optionalText = z.catch(z.optional(z.string()), undefined);
const optionalNumber = z.catch(z.optional(z.number()), undefined);

/** A memory as stored in prompt state (for the same prompt's reuse): the same fields, checked. */
export const MemorySchema = z.object({
  uri: z.string(),
  text: z.string(),
  score: z.optional(z.number()),
  category: z.optional(z.string()),
  detail: z.optional(z.string()),
});

/** One entry of a context-face or recall reply; an entry without a URI reads as null (dropped). */
const Entry = z.catch(
  z.nullable(z.looseObject({
    uri: z.string(),
    text: z.catch(z.string(), ""),
    score: optionalNumber,
    category: optionalText,
    detail: optionalText,
  })),
  null,
);

/** The `entries` member of a reply: a list that is not one reads as empty. */
export const Entries = z.catch(z.array(Entry), []);

/** A memory with its text and URI bounded; undefined when the URI is empty or too long to be read back. */
function bounded(m: Memory): Memory | undefined {
  if (!m.uri || m.uri.length > MAX_URI) return undefined;
  const out: Memory = { uri: m.uri, text: m.text.slice(0, MAX_MEMORY_TEXT) };
  if (m.score !== undefined && Number.isFinite(m.score)) out.score = m.score;
  if (m.category) out.category = m.category.slice(0, 64);
  if (m.detail) out.detail = m.detail.slice(0, 64);
  return out;
}

/** The memories of parsed `entries`, in the server's order, each URI once, at most {@link MAX_MEMORIES}. */
export function memoriesFromEntries(entries: z.output<typeof Entries>): Memory[] {
  const out: Memory[] = [];
  const seen = new Set<string>();
  for (const e of entries) {
    const m = e ? bounded(e) : undefined;
    if (!m || seen.has(m.uri)) continue;
    seen.add(m.uri);
    out.push(m);
    if (out.length >= MAX_MEMORIES) break;
  }
  return out;
}

/** An attribute of an element's open tag, or undefined. */
function attribute(tag: string, name: string): string | undefined {
  return new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1];
}

const ELEMENT = /<memory\b([^<>]*?)(\/>|>([^]*?)<\/memory>)/g;

/** The memories of a rendered text made of `<memory …>` elements (empty when it holds none). */
export function memoriesFromRendered(rendered: string): Memory[] {
  const out: Memory[] = [];
  const seen = new Set<string>();
  for (const m of rendered.slice(0, MAX_MEMORIES * MAX_MEMORY_TEXT).matchAll(ELEMENT)) {
    const tag = m[1];
    const score = Number(attribute(tag, "score"));
    const memory = bounded({
      uri: attribute(tag, "uri") ?? "",
      text: (m[3] ?? "").replace(/^\n/, "").replace(/\n$/, ""),
      score: Number.isFinite(score) && attribute(tag, "score") !== undefined ? score : undefined,
      category: attribute(tag, "type"),
      detail: attribute(tag, "detail"),
    });
    if (!memory || seen.has(memory.uri)) continue;
    seen.add(memory.uri);
    out.push(memory);
    if (out.length >= MAX_MEMORIES) break;
  }
  return out;
}

/** One memory in the server's render.py format (raw: the caller neutralises it before it is printed). */
export function renderElement(m: Memory): string {
  const attrs = [`uri="${m.uri}"`];
  if (m.category) attrs.push(`type="${m.category}"`);
  if (m.score !== undefined) attrs.push(`score="${m.score.toFixed(2)}"`);
  if (m.detail) attrs.push(`detail="${m.detail}"`);
  return m.text ? `<memory ${attrs.join(" ")}>\n${m.text}\n</memory>` : `<memory ${attrs.join(" ")} />`;
}
