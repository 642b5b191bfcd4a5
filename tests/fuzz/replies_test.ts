/**
 * Fuzzing what OpenViking sends back (random statuses and bodies, fetches that throw, hang or cut the body)
 * through a fake fetch: nothing throws, and every failure is classified with the one retry rule.
 */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { AnyResult, createClient, envelopeOf } from "../../openviking/client.ts";
import { params } from "./arbitraries.ts";
import { FINAL_CODES, SERVER_ERROR_CODES } from "../support/fake-openviking.ts";

const encoder = new TextEncoder();

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
