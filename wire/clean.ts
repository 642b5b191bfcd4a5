/**
 * Text cleaning for capture: strips everything that was injected into the conversation (our own recall
 * blocks, other memory plugins' blocks, system reminders, hook results), then the capture filters
 * (empty, acknowledgements, slash commands, punctuation only, too short) and truncation.
 */

/** Tags whose whole element (open tag … close tag) is injected context; an unclosed one runs to the end. */
const INJECTED_TAGS = [
  "openviking-context",
  "relevant-memories",
  "relevant-memory",
  "system-reminder",
  "hook_result",
  "user-profile",
  "available-memories",
  "available-skills",
  "memory-context",
  "claude-mem-context",
];

const TAG_PATTERNS = INJECTED_TAGS.map((tag) =>
  new RegExp(`<${tag}(?=[\\s>/])[^>]*>[\\s\\S]*?(?:</${tag}\\s*>|$)`, "gi")
);
const SELF_CLOSING = INJECTED_TAGS.map((tag) => new RegExp(`<${tag}(?=[\\s/])[^>]*/>`, "gi"));

const OTHER_INJECTIONS: RegExp[] = [
  // Digest blocks other OpenViking plugins inject.
  /(?:^|\n)OpenViking (?:session archive|memory) digest:[\s\S]*?(?:\n\s*\n|$)/g,
  // The "use the MCP tools" hint line.
  /^.*More detail: use the OpenViking MCP.*$/gm,
  // Sender / conversation-metadata fences some hosts prepend.
  /```(?:json)?\s*\n\s*\{[^`]*?"(?:sender|conversation_label|session_id|message_id)"[^`]*?\}\s*\n```/g,
  /^(?:Conversation info|Conversation metadata|Sender)(?: \(untrusted metadata\))?:\s*\n```[\s\S]*?```\s*/gm,
  // "[openviking-memory] …" status lines.
  /^\[openviking-memory\].*$/gm,
];

/** A leading "[Mon 2026-11-30 12:00 UTC]" style timestamp. */
const LEADING_TIMESTAMP =
  /^\s*\[(?:[A-Z][a-z]{2} )?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?: ?[A-Z]{2,5}|Z|[+-]\d{2}:?\d{2})?\]\s*/;

/** Removes every injected block from a text and normalises blank lines. */
export function cleanInjected(text: string): string {
  let out = text.replace(/\0/g, "");
  for (const p of TAG_PATTERNS) out = out.replace(p, "");
  for (const p of SELF_CLOSING) out = out.replace(p, "");
  for (const p of OTHER_INJECTIONS) out = out.replace(p, "");
  out = out.replace(LEADING_TIMESTAMP, "");
  return out.replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
}

const ACKS = new Set([
  "ok",
  "okay",
  "k",
  "kk",
  "yes",
  "yep",
  "yeah",
  "y",
  "no",
  "nope",
  "n",
  "sure",
  "thanks",
  "thank you",
  "thx",
  "ty",
  "got it",
  "cool",
  "nice",
  "great",
  "go",
  "go on",
  "continue",
  "next",
  "done",
  "good",
  "fine",
  "lgtm",
  "收到",
  "好的",
  "好",
  "嗯",
  "嗯嗯",
  "可以",
  "继续",
  "不用",
  "不需要",
  "没了",
  "好了",
  "谢谢",
  "行",
  "对",
]);

/** Why a text is not captured, or "" when it is. */
export type SkipReason = "" | "empty" | "ack" | "slash-command" | "punctuation" | "too-short";

function isCjk(cp: number): boolean {
  return (cp >= 0x3040 && cp <= 0x30ff) || (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xac00 && cp <= 0xd7af) || (cp >= 0xf900 && cp <= 0xfaff);
}

/** A one-line `/command` with at most three arguments (a path like "/tmp is full, clean it" is not one). */
function isSlashCommand(text: string): boolean {
  if (text.includes("\n")) return false;
  const m = /^\/[a-z0-9_:-]{1,64}(?:\s+(.*))?$/i.exec(text);
  return m !== null && (m[1] ?? "").split(/\s+/).filter(Boolean).length <= 3;
}

/** The capture filters: why `text` (already cleaned) from `role` should not be captured, or "". */
export function skipReason(text: string, role: "user" | "assistant"): SkipReason {
  const t = text.trim();
  if (!t) return "empty";
  if (role === "user" && isSlashCommand(t)) return "slash-command";
  const bare = t.toLowerCase().replace(/[\s\p{P}\p{S}]+$/u, "").replace(/^[\s\p{P}\p{S}]+/u, "");
  if (!bare) return "punctuation";
  if (ACKS.has(bare)) return "ack";
  let cjk = 0;
  let alnum = 0;
  for (const ch of t) {
    const cp = ch.codePointAt(0)!;
    if (isCjk(cp)) cjk++;
    else if (/[\p{L}\p{N}]/u.test(ch)) alnum++;
  }
  if (cjk < 4 && alnum < 6 && t.length < 12) return "too-short";
  return "";
}

/** Marker appended to a truncated text. */
export const TRUNCATION_MARK = "\n[truncated]";

/** Cuts a text to at most `max` characters (marker included), never splitting a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = Math.max(0, max - TRUNCATION_MARK.length);
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return text.slice(0, cut) + TRUNCATION_MARK;
}
