/** A tiny OpenAI-compatible model server on loopback for running the real OpenViking server in tests. */

import { type ChatMessage, messageText, ModelServer, type Script } from "./model-server.ts";

/** The real OpenViking's model: a {@link ModelServer} with embeddings and canned chat replies. */
export interface EmbeddingStub {
  server: ModelServer;
  /** Base URL ending in `/v1`, for `api_base`. */
  baseUrl: string;
  /** While true, chat completions fail with 503 (a broken chat model). */
  chatDown: boolean;
  /** What each chat request so far asked for ({@link cannedReply}'s kinds), oldest first. */
  kinds(): string[];
  stop(): Promise<void>;
}

/** Model id the stub reports for both embeddings and chat. */
export const STUB_MODEL = "stub-model";

/** The 32-bit FNV-1a hash of `text`'s UTF-16 units (a stable, seeded stand-in for a real digest). */
export function fnv1a(text: string, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Lower-cased word tokens (ASCII words and single CJK characters). */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9_]+|[\u3040-\u30ff\u3400-\u9fff]/g) ?? [];
}

/** The deterministic unit vector for `text`: each token (and its 3-gram pieces) adds ±1 at a hashed index. */
function embedText(text: string, dimension: number): number[] {
  const v = new Array<number>(dimension).fill(0);
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    const sign = (fnv1a(feature, 0x9e3779b9) & 1) === 0 ? 1 : -1;
    v[h % dimension] += sign * weight;
  };
  for (const token of tokenize(text)) {
    add(`w:${token}`, 1);
    if (token.length > 4) {
      for (let i = 0; i + 3 <= token.length; i++) add(`g:${token.slice(i, i + 3)}`, 0.25);
    }
  }
  let norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  if (norm === 0) {
    v[0] = 1;
    norm = 1;
  }
  return v.map((x) => x / norm);
}

function toBase64Float32(vector: number[]): string {
  const bytes = new Uint8Array(new Float32Array(vector).buffer);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function inputTexts(input: unknown): string[] {
  if (typeof input === "string") return [input];
  if (Array.isArray(input)) {
    return input.map((item) => {
      if (typeof item === "string") return item;
      if (Array.isArray(item)) return item.join(" ");
      if (item && typeof item === "object" && "text" in item) return String(item.text);
      return JSON.stringify(item);
    });
  }
  return [JSON.stringify(input ?? "")];
}

interface CannedReply {
  kind: string;
  content: string;
}

/** A Python triple-quoted literal of `text` (backslashes and every quote escaped, so no edge breaks it). */
function tripleQuoted(text: string): string {
  return `"""${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"""`;
}

/** The user lines of the "## Conversation History" block of a memory-extraction prompt. */
function conversationUserLines(prompt: string): string[] {
  const lines: string[] = [];
  for (const line of prompt.split("\n")) {
    const m = line.match(/^\[\d+\]\[user\](?:\[[^\]]*\])?:\s*(.*)$/);
    if (m && m[1].trim()) lines.push(m[1].trim());
  }
  return lines;
}

/** A restricted-Python memory program storing the conversation's first user line as a preference. */
function memoryProgram(prompt: string): string {
  const first = conversationUserLines(prompt)[0];
  if (!first) return "sdk.commit()";
  const words = tokenize(first).filter((w) => /^[a-z0-9]+$/.test(w)).slice(0, 3);
  const topic = words.length > 0 ? words.join("_") : "general";
  return [
    `sdk.create_preferences(user=${tripleQuoted("default")}, topic=${tripleQuoted(topic)}, content=${
      tripleQuoted(`- ${first}`)
    })`,
    "sdk.commit()",
  ].join("\n");
}

/** The query-planner answer: one memory query with the prompt's "### Current Message". */
function plannerReply(prompt: string): string {
  const m = prompt.match(/### Current Message\s*\n([\s\S]*?)(?:\n\s*\n|$)/);
  const query = m?.[1].trim() ?? "";
  return JSON.stringify({
    queries: query ? [{ query, context_type: "memory", intent: "recall", priority: 1 }] : [],
  });
}

/** The recall-rewrite answer: one cited bullet per `<memory uri=…>` fragment of the prompt. */
function rewriteReply(prompt: string): string {
  const bullets: string[] = [];
  for (const m of prompt.matchAll(/<memory uri="([^"]+)"[^>]*>\s*([\s\S]*?)<\/memory>/g)) {
    const firstLine = m[2].split("\n").map((l) => l.replace(/^[-*#\s]+/, "").trim()).find((l) => l) ?? "";
    if (firstLine) bullets.push(`- ${firstLine} source: ${m[1]}`);
  }
  return bullets.length > 0 ? bullets.slice(0, 6).join("\n") : "NO_RELEVANT_MEMORY";
}

/** Picks a canned reply for a chat request from what its prompt asks for. */
function cannedReply(body: { messages?: unknown }): CannedReply {
  const messages = Array.isArray(body.messages) ? body.messages as ChatMessage[] : [];
  const all = messages.map(messageText).join("\n");
  const lower = all.toLowerCase();
  if (lower.includes("reply only ok")) return { kind: "ping", content: "OK" };
  if (lower.includes("restricted python memory sdk")) return { kind: "memory", content: memoryProgram(all) };
  if (lower.includes("context query planner")) return { kind: "planner", content: plannerReply(all) };
  if (lower.includes("memory relevance compressor")) return { kind: "rewrite", content: rewriteReply(all) };
  return { kind: "text", content: "Summary: a short stub summary of the given content." };
}

/** Starts the stub on 127.0.0.1, serving vectors of `dimension`. */
export async function startEmbeddingStub(dimension: number): Promise<EmbeddingStub> {
  const embed = (b: Record<string, unknown>) => {
    const texts = inputTexts(b.input);
    const dim = typeof b.dimensions === "number" ? b.dimensions : dimension;
    const encode = (v: number[]) => b.encoding_format === "base64" ? toBase64Float32(v) : v;
    return {
      object: "list",
      model: b.model ?? STUB_MODEL,
      data: texts.map((t, index) => ({ object: "embedding", index, embedding: encode(embedText(t, dim)) })),
      usage: { prompt_tokens: texts.length, total_tokens: texts.length },
    };
  };
  const stub = { chatDown: false } as EmbeddingStub;
  const script: Script = (req) =>
    stub.chatDown
      ? { kind: "error", status: 503, message: "stub: the chat model is down" }
      : { kind: "text", text: cannedReply(req.body).content };
  const server = await ModelServer.start(script, { model: STUB_MODEL, embed });
  return Object.assign(stub, {
    server,
    baseUrl: server.baseUrl,
    kinds: () => server.chatRequests().map((r) => cannedReply(r.body).kind),
    stop: () => server.close(),
  });
}
