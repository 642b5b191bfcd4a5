/** The hook input: Kimi Code's payload on stdin, read to the end, parsed once at the edge (unknown fields allowed). */

import * as z from "zod/mini";
import { parseJsonOrUndefined } from "../lib/fs.ts";
import { isRecord, tolerant } from "../lib/parsed.ts";

/** A content part (its text is read when it is a text part), and a prompt: a string or content parts. */
export const ContentPart = z.looseObject({ type: z.string(), text: z.optional(z.string()) });
export const PromptValue = z.union([z.string(), z.array(ContentPart)]);
const Id = z.pipe(z.union([z.string(), z.number()]), z.transform(String));

/** Fields of Kimi Code hook payloads this plugin reads. */
const HookInputSchema = z.looseObject({
  hook_event_name: tolerant(z.string()),
  session_id: tolerant(z.string()),
  cwd: tolerant(z.string()),
  prompt: tolerant(PromptValue),
  tool_name: tolerant(z.string()),
  tool_input: tolerant(z.unknown()),
  source: tolerant(z.string()),
  reason: tolerant(z.string()),
  trigger: tolerant(z.string()),
  turn_id: tolerant(Id),
});

/** A parsed hook payload. */
export type HookInput = z.infer<typeof HookInputSchema>;

/** Parses raw stdin bytes into a payload, or explains why it is unusable. */
export function parseHookInput(
  bytes: Uint8Array,
): { ok: true; input: HookInput } | { ok: false; reason: string } {
  if (bytes.length === 0) return { ok: false, reason: "empty stdin" };
  const value = parseJsonOrUndefined(new TextDecoder().decode(bytes));
  if (value === undefined) return { ok: false, reason: `stdin is not JSON (${bytes.length} bytes)` };
  if (isRecord(value)) return { ok: true, input: HookInputSchema.parse(value) }; // every field is tolerant
  const kind = Array.isArray(value) ? "array" : typeof value;
  return { ok: false, reason: `stdin is JSON but not an object (${kind})` };
}

/** Text of content parts (text parts only, joined by newlines), or a plain string prompt. */
export function partsText(input: unknown): string {
  if (typeof input === "string") return input;
  if (!Array.isArray(input)) return "";
  const texts = input.filter((p) => isRecord(p) && p.type === "text").map((p) => String(p.text ?? ""));
  return texts.filter(Boolean).join("\n");
}

/** The prompt text of a payload: `prompt`, a string or content parts. */
export const promptText = (input: HookInput): string => partsText(input.prompt);

/** The host's session id (`session_id`), or "". */
export const hostSessionId = (input: HookInput): string => (input.session_id ?? "").trim();
