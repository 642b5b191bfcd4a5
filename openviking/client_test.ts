/** The one classification of replies: only OpenViking's own envelope rejects; everything else keeps writes. */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { neutralize } from "../lib/neutralize.ts";
import { classifyReply, cleanFailure, type FailureKind } from "./client.ts";
import { withoutUserinfo } from "../lib/scrub.ts";
import { hostileText, params } from "../tests/fuzz/arbitraries.ts";
import { FINAL_CODES, SERVER_ERROR_CODES } from "../tests/support/fake-openviking.ts";

const origin = "http://127.0.0.1:1933";
const env = (status: "ok" | "error", extra: Record<string, unknown> = {}) =>
  JSON.stringify({ status, ...extra });
const err = (code: string, message = "m", details?: unknown) =>
  env("error", { error: { code, message, ...(details ? { details } : {}) } });

const CASES: [string, number, string, FailureKind | "ok", Record<string, string>?][] = [
  ["envelope ok", 200, env("ok", { result: { a: 1 } }), "ok"],
  ["/health (fields beside status)", 200, env("ok", { healthy: true, version: "0.5.2" }), "ok"],
  ["HTML 200", 200, "<html><title>Welcome to nginx!</title></html>", "not-openviking"],
  ["non-JSON 200", 200, "OK", "not-openviking"],
  ["empty 200", 200, "", "not-openviking"],
  ["foreign JSON 200", 200, '{"result": 1}', "not-openviking"],
  ["FastAPI 404", 404, '{"detail":"Not Found"}', "not-openviking"],
  ["HTML 404", 404, "<h1>404</h1>", "not-openviking"],
  ["OpenViking route 404", 404, err("NOT_FOUND", "Not Found"), "missing-route"],
  ["OpenViking 405", 405, err("METHOD_NOT_ALLOWED"), "missing-route"],
  [
    "session not found",
    404,
    err("NOT_FOUND", "Session not found: kc-x", { type: "session", resource: "kc-x" }),
    "rejected",
  ],
  ["invalid argument", 400, err("INVALID_ARGUMENT"), "rejected"],
  ["too long (OpenViking)", 413, err("INVALID_ARGUMENT"), "rejected"],
  ["too long (proxy)", 413, "<html>413 Request Entity Too Large</html>", "not-openviking"],
  ["conflict", 409, err("CONFLICT"), "server"],
  ["retryable conflict", 409, err("CONFLICT", "busy", { retryable: true }), "server"],
  ["an error envelope with no code, in a 200", 200, env("error"), "server"],
  ["an error envelope with no code, in a 400", 400, env("error", { error: { message: "no" } }), "server"],
  ["a final code in a 200", 200, err("INVALID_ARGUMENT"), "server"],
  [
    "an ok envelope with a final code, in a 400",
    400,
    env("ok", { error: { code: "INVALID_ARGUMENT" } }),
    "server",
  ],
  ["a code OpenViking does not send", 400, err("NO_SUCH_CODE"), "server"],
  [
    "an upstream model refused the server's request",
    400,
    err("INVALID_ARGUMENT", "Upstream model request was rejected (HTTP 400)", {
      upstream_message: "bad model",
    }),
    "server",
  ],
  ["401 envelope", 401, err("UNAUTHENTICATED"), "auth"],
  ["401 bare", 401, "Unauthorized", "auth"],
  ["403", 403, err("PERMISSION_DENIED"), "auth"],
  ["auth code in a 200 error", 200, err("UNAUTHENTICATED"), "auth"],
  ["unavailable in a 200 error", 200, err("UNAVAILABLE"), "server"],
  ["500 envelope", 500, err("INTERNAL"), "server"],
  ["502 HTML", 502, "<html>Bad Gateway</html>", "server"],
  ["429", 429, "", "server"],
  ["408", 408, "", "server"],
  ["301 to https", 301, "", "redirect", { location: "https://user:sekrit@example.com/ov" }],
  ["307", 307, "", "redirect", { location: "/api/v2/x" }],
];

Deno.test("classifyReply: every reply kind users meet, one verdict each", () => {
  for (const [name, status, text, want, headers] of CASES) {
    const r = classifyReply({ status, text, origin, location: headers?.location, contentType: "text/html" });
    assertEquals(r.ok ? "ok" : r.kind, want, name);
    if (!r.ok) assertEquals(r.retryable, r.kind !== "rejected", `${name}: only a rejection is final`);
  }
});

// What each code OpenViking 0.5.2 sends means for a write: only a request that would get the same answer
// unchanged, whatever an admin does, is final.
Deno.test("classifyReply: every code OpenViking sends, with its status — only a malformed request is final", () => {
  const verdicts = Object.entries(SERVER_ERROR_CODES).map(([code, status]) => {
    const r = classifyReply({ status, text: err(code, "Model provider API key is not configured"), origin });
    return [code, r.ok ? "ok" : r.kind];
  });
  assertEquals(
    verdicts,
    Object.entries(SERVER_ERROR_CODES).map(([code]) => [
      code,
      code === "NOT_FOUND"
        ? "missing-route" // naming no resource: the route itself is missing (an older server)
        : FINAL_CODES.includes(code)
        ? "rejected"
        : code === "UNAUTHENTICATED" || code === "PERMISSION_DENIED"
        ? "auth"
        : "server",
    ]),
  );
});

Deno.test("classifyReply: a redirect names where it points, without user info", () => {
  const r = classifyReply({ status: 301, text: "", origin, location: "https://user:sekrit@example.com/ov" });
  assertEquals(r.ok ? "" : [r.kind, r.location], ["redirect", "https://example.com/ov"]);
  assertEquals(r.ok ? "" : r.error.message.includes("sekrit"), false);
  assertEquals(withoutUserinfo("http://a:b@h:1/p"), "http://h:1/p");
});

Deno.test("classifyReply: a page that is not OpenViking's is named by its title, never printed whole", () => {
  const page = `<html><title>Sign in</title><body>${"x".repeat(10_000)}</body></html>`;
  const r = classifyReply({ status: 200, text: page, origin, contentType: "text/html; charset=utf-8" });
  assertEquals(
    r.ok ? "" : r.error.message,
    `${origin} answered HTTP 200 with text/html "Sign in", not an OpenViking reply`,
  );
});

Deno.test("fuzz: a failure as the client hands it out is neutral and holds no secret, whatever the server said", () => {
  const key = "sk-fuzz-0123456789abcdef";
  fc.assert(
    fc.property(
      hostileText,
      hostileText,
      fc.constantFrom("", key, `Bearer ${key}`, "https://u:p4ss@h/"),
      (a, b, s) => {
        const said = classifyReply({ status: 401, origin, text: err("UNAUTHENTICATED", `${a}${s}${b}`) });
        if (said.ok) throw new Error("a 401 is a failure");
        const told = cleanFailure(said, [key]);
        assertEquals(neutralize(told.error.message), told.error.message);
        assertTrue(!told.error.message.includes(key) && !told.error.message.includes("p4ss"));
      },
    ),
    params(300),
  );
});
