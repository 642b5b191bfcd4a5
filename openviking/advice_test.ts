/** The advice for a recorded cause: the same words and fix as for the failure it was recorded from. */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../tests/support/assert.ts";
import { adviceFor, adviceForCause, causeOf } from "./advice.ts";
import { ROOT_KEY_REFUSAL } from "../tests/support/fake-openviking.ts";
import { classifyReply, createClient, failure } from "./client.ts";
import * as z from "zod/mini";
import { closedAddress } from "../tests/install/helpers.ts";
import { commandName } from "../lib/self.ts";

const origin = "http://127.0.0.1:1933";

Deno.test("adviceForCause: a recorded redirect is advised as the redirect itself was, its target named", () => {
  const f = classifyReply({ status: 301, text: "", origin, location: "https://ov.example.com/" });
  if (f.ok) throw new Error("a redirect is a failure");
  const recorded = JSON.parse(JSON.stringify(causeOf(f)));
  assertEquals(adviceForCause(recorded, origin), adviceFor(f, origin));
  assertEquals(
    adviceForCause(recorded, origin).fix,
    `save the address it redirects to: \`${commandName()} install --url https://ov.example.com\``,
  );
});

Deno.test("adviceForCause: a recorded timeout (a hung server) is advised as one, not as a server that is not running", () => {
  const f = failure("unreachable", 0, {
    code: "TIMEOUT",
    message: `no answer from ${origin} within 8000 ms`,
  });
  const recorded = JSON.parse(JSON.stringify(causeOf(f)));
  assertEquals(adviceForCause(recorded, origin), adviceFor(f, origin));
  assertMatch(adviceForCause(recorded, origin).summary, /takes connections but does not answer in time/);
});

Deno.test("adviceForCause: a recorded target that is not a URL (an edited file) gives the general fix, never a throw", () => {
  const advice = adviceForCause(
    { kind: "redirect", status: 302, message: "m", location: "not a url" },
    origin,
  );
  assertEquals(advice.fix, `save the server's real address with \`${commandName()} install --url URL\``);
});

Deno.test("adviceFor a refused key: a root key is named as one; every refusal says where a user key comes from", () => {
  const envelope = (status: number, code: string, message: string) =>
    classifyReply({ status, text: JSON.stringify({ status: "error", error: { code, message } }), origin });
  const root = envelope(403, "PERMISSION_DENIED", ROOT_KEY_REFUSAL);
  const wrong = envelope(401, "UNAUTHENTICATED", "Invalid API key");
  if (root.ok || wrong.ok) throw new Error("refusals are failures");
  const r = adviceFor(root, origin);
  assertMatch(r.summary, /^the server refused the key \(HTTP 403\): it is OpenViking's root key/);
  assertTrue(
    r.fix.startsWith(
      `give it once to \`${commandName()} install --api-key-stdin\`: install makes a user key`,
    ),
    r.fix,
  );
  const w = adviceFor(wrong, origin);
  assertEquals(w.summary, "the server refused the key (HTTP 401): Invalid API key");
  assertMatch(w.fix, /root key \(ov\.conf's server\.root_api_key\) once, install makes a user key/);
  assertMatch(w.fix, /`ov admin register-user ACCOUNT USER`/);
  assertEquals(adviceForCause(causeOf(root), origin), r, "recorded, the same advice");
});

Deno.test("adviceFor a server that takes the connection and never answers: not told to start it", async () => {
  // A hung server: it accepts every connection and never writes a byte.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  const base = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
  const hung = await createClient({ baseUrl: base, timeoutMs: 300, userAgent: "test" }).request(
    "GET",
    "/health",
    z.unknown(),
  );
  const refused = await createClient({ baseUrl: closedAddress(), timeoutMs: 300, userAgent: "test" }).request(
    "GET",
    "/health",
    z.unknown(),
  );
  listener.close();
  for (const c of held) c.close();
  await accepting.catch(() => {});
  if (hung.ok || refused.ok) throw new Error("neither answers");
  const a = adviceFor(hung, base);
  assertMatch(a.summary, new RegExp(`^OpenViking at ${base} takes connections but does not answer in time`));
  assertMatch(a.fix, /check the server's log .*restart it/);
  assertNotMatch(a.fix, /\bstart the server/);
  assertMatch(adviceFor(refused, base).fix, /^start the server/, "a refused connection: start it");
});
