/**
 * Fuzzing what servers send back: SSE streams (any text, any line endings, cut into any chunks), MCP replies
 * (random bodies and content types, bodies that break off) and OpenViking replies (random statuses and
 * bodies, fetches that throw, hang or cut the body) through a fake fetch, and MCP client lines. Nothing
 * throws; the SSE parser gives the same events however the stream is chunked; every failure is classified
 * with the one retry rule.
 */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { parseSse, SseParser } from "../../mcp/sse.ts";
import { readReply } from "../../mcp/reply.ts";
import { type Classified, parseLine } from "../../mcp/jsonrpc.ts";
import { AnyResult, createClient, envelopeOf } from "../../openviking/client.ts";
import { nastyString, params } from "./arbitraries.ts";
import { FINAL_CODES, SERVER_ERROR_CODES } from "../support/fake-openviking.ts";

const eol = fc.constantFrom("\n", "\r\n", "\r");

/** An SSE-ish text: fields, comments, blank lines and junk, with mixed line endings and maybe a BOM. */
const sseText = fc.tuple(
  fc.boolean(),
  fc.array(
    fc.tuple(
      fc.oneof(
        fc.tuple(fc.constantFrom("data", "event", "id", "retry", "dat", ""), fc.string({ maxLength: 20 }))
          .map(([f, v]) => `${f}:${v}`),
        fc.string({ maxLength: 20 }).map((v) => `data: ${v}`),
        fc.string({ maxLength: 10 }).map((v) => `: ${v}`),
        fc.nat(99_999).map((n) => `retry: ${n}`),
        fc.constant(""),
        nastyString,
      ),
      eol,
    ),
    { maxLength: 25 },
  ),
).map(([bom, lines]) => `${bom ? "\ufeff" : ""}${lines.map(([l, e]) => l + e).join("")}`);

/** Splits a text at random positions. */
function chunked(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => (text.length ? c % (text.length + 1) : 0)))].sort((a, b) => a - b);
  const out: string[] = [];
  let prev = 0;
  for (const c of [...at, text.length]) {
    out.push(text.slice(prev, c));
    prev = c;
  }
  return out;
}

Deno.test("fuzz: the SSE parser gives the same events however the stream is chunked", () => {
  let events = 0;
  fc.assert(
    fc.property(sseText, fc.array(fc.nat(), { maxLength: 8 }), (text, cuts) => {
      const whole = parseSse(text);
      const parser = new SseParser();
      const pieces = chunked(text, cuts).flatMap((c) => parser.push(c));
      const got = [...pieces, ...parser.end()];
      assertEquals(got, whole);
      events += got.length;
      for (const e of got) assertTrue(typeof e.data === "string" && typeof e.event === "string");
      const once = new SseParser();
      once.push(text);
      once.end();
      assertEquals(parser.lastEventId, once.lastEventId);
      assertEquals(parser.retryMs, once.retryMs);
    }),
    params(3000),
  );
  assertTrue(events > 1000, `the streams held events (${events})`);
});

const encoder = new TextEncoder();

/** JSON-RPC messages (and junk) a server might send. */
const rpcMessage = fc.oneof(
  fc.record({
    jsonrpc: fc.constant("2.0"),
    id: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constantFrom("a", "b")),
    result: fc.jsonValue({ maxDepth: 2 }),
  }),
  fc.record({
    jsonrpc: fc.constant("2.0"),
    id: fc.integer({ min: 0, max: 5 }),
    error: fc.record({ code: fc.integer(), message: fc.string() }),
  }),
  fc.record({ jsonrpc: fc.constant("2.0"), method: fc.string({ maxLength: 10 }), params: fc.jsonValue() }),
  fc.jsonValue({ maxDepth: 2 }),
);

/** A response whose body arrives in the given chunks and then ends, or breaks off. */
function response(chunks: Uint8Array[], contentType: string | undefined, cut: boolean): Response {
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]);
      else if (cut) controller.error(new TypeError("connection reset"));
      else controller.close();
    },
  });
  return new Response(body, { headers: contentType ? { "content-type": contentType } : {} });
}

Deno.test("fuzz: MCP replies — any body, content type and break-off is read without throwing", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(rpcMessage, { maxLength: 5 }),
      fc.constantFrom("json", "sse", "junk"),
      fc.constantFrom(
        "application/json",
        "text/event-stream",
        "TEXT/EVENT-STREAM; charset=utf-8",
        "text/html",
        undefined,
      ),
      fc.array(fc.nat(), { maxLength: 5 }),
      fc.boolean(),
      fc.oneof(fc.constant(undefined), fc.integer({ min: 0, max: 5 }), fc.constant("a")),
      fc.uint8Array({ maxLength: 40 }),
      async (messages, shape, contentType, cuts, cut, expectId, junk) => {
        const text = shape === "json"
          ? JSON.stringify(messages.length === 1 ? messages[0] : messages)
          : shape === "sse"
          ? messages.map((m, i) => `id: ${i}\nevent: message\ndata: ${JSON.stringify(m)}\n\n`).join("")
          : "";
        const bytes = shape === "junk" ? junk : encoder.encode(text);
        const pieces = chunked(Array.from(bytes, (b) => String.fromCharCode(b)).join(""), cuts).map((s) =>
          Uint8Array.from(s, (c) => c.charCodeAt(0))
        );
        const seen: Classified[] = [];
        const outcome = await readReply(
          response(pieces, contentType, cut),
          expectId,
          (item) => void seen.push(item),
        );
        assertEquals(outcome.delivered, seen.length, "every delivered message reached the sink");
        assertEquals(
          outcome.invalidSample !== undefined,
          outcome.invalid > 0,
          "a sample exactly when something was invalid",
        );
        assertTrue((outcome.invalidSample ?? "").length <= 201, "the sample is bounded");
        if (outcome.answered) {
          assertTrue(
            seen.some((m) => m.kind === "response" && m.message.id === expectId),
            "answered by its id",
          );
        }
        if (
          !cut && expectId === undefined && shape === "sse" &&
          contentType?.toLowerCase().includes("event-stream")
        ) {
          const valid = messages.filter((m) => m && typeof m === "object" && !Array.isArray(m));
          assertTrue(seen.length <= messages.length && seen.length + outcome.invalid >= valid.length);
        }
      },
    ),
    params(1500),
  );
});

/** How the fake fetch behaves. */
type Behaviour = "answer" | "throw" | "hang" | "cut";

Deno.test("fuzz: OpenViking replies — any status, body or transport failure becomes one classified outcome", async () => {
  const apiKey = "sk-fuzz-client-key-0123456789";
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom<Behaviour>("answer", "answer", "answer", "throw", "hang", "cut"),
      fc.oneof(fc.integer({ min: 200, max: 599 }), fc.constantFrom(...Object.values(SERVER_ERROR_CODES))),
      fc.oneof(
        fc.string({ maxLength: 40 }),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
        fc.record({
          status: fc.constantFrom("ok", "error", 1, null),
          result: fc.jsonValue({ maxDepth: 2 }),
          error: fc.oneof(
            fc.string({ maxLength: 10 }),
            fc.record({
              // Every code the server sends, one it does not, or none at all (requiredKeys: []).
              code: fc.oneof(fc.constantFrom(...Object.keys(SERVER_ERROR_CODES), "X"), fc.integer()),
              message: fc.oneof(fc.string({ maxLength: 10 }), fc.integer()),
              details: fc.oneof(
                fc.record({ retryable: fc.boolean() }),
                fc.record({ resource: fc.string({ maxLength: 5 }) }),
                fc.record({ upstream_message: fc.string({ maxLength: 5 }) }),
                fc.jsonValue({ maxDepth: 1 }),
              ),
            }, { requiredKeys: [] }),
          ),
          detail: fc.string({ maxLength: 10 }),
        }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
      ),
      async (behaviour, status, body) => {
        const fetcher = (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
          if (behaviour === "throw") return Promise.reject(new TypeError("connection refused"));
          if (behaviour === "hang") {
            return new Promise((_, reject) =>
              init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")))
            );
          }
          const bytes = encoder.encode(body);
          return Promise.resolve(
            // Whole, or (cut) half of it and then the connection breaks.
            response(
              [behaviour === "cut" ? bytes.subarray(0, bytes.length >> 1) : bytes],
              "application/json",
              behaviour === "cut",
            ),
          )
            .then((r) => new Response(r.body, { status }));
        };
        const client = createClient({
          baseUrl: "http://127.0.0.1:1933/",
          apiKey,
          userAgent: "fuzz",
          timeoutMs: behaviour === "hang" ? 5 : 1000,
          fetch: fetcher as typeof fetch,
        });
        const res = await client.request("POST", "/api/v1/sessions/s/messages", AnyResult, {
          body: { x: 1 },
        });
        const sent = behaviour === "answer" ? body : "";
        if (res.ok) {
          assertTrue(behaviour === "answer" && status >= 200 && status < 300, "ok only for a 2xx answer");
          assertEquals(envelopeOf(sent)?.status, "ok", "ok only for OpenViking's own envelope");
          return;
        }
        assertEquals(typeof res.error.message, "string");
        assertEquals(res.retryable, res.kind !== "rejected", "one rule: only a rejection is final");
        if (res.kind === "rejected") {
          const error = envelopeOf(sent)?.error as { code?: unknown; details?: unknown } | undefined;
          assertTrue(
            envelopeOf(sent)?.status === "error",
            "only OpenViking itself (its error envelope) rejects",
          );
          assertTrue(status >= 400 && status < 500, "a rejection is a 4xx");
          assertTrue(
            FINAL_CODES.includes(String(error?.code)),
            `only a final code rejects, not ${error?.code}`,
          );
          assertTrue(JSON.stringify(error?.details ?? {}).includes("upstream_message") === false);
        }
        if (behaviour !== "answer") assertEquals(res.status, 0, "no HTTP answer is status 0 (retryable)");
        assertTrue(!res.error.message.includes(apiKey), "the API key is never in an error message");
      },
    ),
    params(1500),
  );
});

Deno.test("fuzz: MCP client lines — any line is a message, a batch, or an error reply that serialises", () => {
  const line = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
    fc.array(rpcMessage, { maxLength: 3 }).map((v) => JSON.stringify(v)),
    rpcMessage.map((v) => JSON.stringify(v)),
    fc.record({
      jsonrpc: fc.oneof(fc.constant("2.0"), fc.jsonValue({ maxDepth: 0 })),
      id: fc.jsonValue({ maxDepth: 1 }),
      method: fc.oneof(fc.string({ maxLength: 8 }), fc.integer()),
      params: fc.jsonValue({ maxDepth: 1 }),
      result: fc.jsonValue({ maxDepth: 1 }),
      error: fc.jsonValue({ maxDepth: 1 }),
    }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
  );
  fc.assert(
    fc.property(line, (text) => {
      const parsed = parseLine(text);
      if (parsed.kind === "invalid") {
        const reply = JSON.parse(JSON.stringify(parsed.reply)) as {
          jsonrpc: string;
          error: { code: number };
        };
        assertEquals(reply.jsonrpc, "2.0");
        assertEquals(typeof reply.error.code, "number");
        assertTrue(!JSON.stringify(parsed.reply).includes("\n"), "one line");
      } else if (parsed.kind === "batch") assertTrue(parsed.items.length > 0);
      else assertTrue(["request", "notification", "response"].includes(parsed.item.kind));
    }),
    params(3000),
  );
});
