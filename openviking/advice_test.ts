/** Advice: the words and fix per failure, the same for a recorded cause as for the failure it came from. */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../tests/support/assert.ts";
import { adviceFor, causeOf } from "./advice.ts";
import { ROOT_KEY_REFUSAL } from "../tests/support/fake-openviking.ts";
import { classifyReply, failure, type OvFailure } from "./client.ts";
import { commandName } from "../lib/self.ts";

const origin = "http://127.0.0.1:1933";

/** The failure of one classified reply. */
function failed(status: number, text: string, location?: string): OvFailure {
  const f = classifyReply({ status, text, origin, location });
  if (f.ok) throw new Error(`HTTP ${status} is a failure`);
  return f;
}

const envelope = (code: string, message: string) =>
  JSON.stringify({ status: "error", error: { code, message } });

Deno.test("adviceFor: a recorded failure is advised as the failure itself was", () => {
  const redirect = failed(301, "", "https://ov.example.com/");
  const late = `no answer from ${origin} within 8000 ms`;
  const hung = failure("unreachable", 0, { code: "TIMEOUT", message: late });
  const refused = failure("unreachable", 0, { code: "CONNECT", message: `cannot reach ${origin}` });
  const root = failed(403, envelope("PERMISSION_DENIED", ROOT_KEY_REFUSAL));
  const model = failed(401, envelope("UNAUTHENTICATED", "Upstream model authentication failed (HTTP 401)"));
  for (const f of [redirect, hung, refused, root, model]) {
    assertEquals(adviceFor(JSON.parse(JSON.stringify(causeOf(f))), origin), adviceFor(f, origin), f.kind);
  }
  assertEquals(
    adviceFor(redirect, origin).fix,
    `save the address it redirects to: \`${commandName()} install --url https://ov.example.com\``,
  );
  const waits = adviceFor(hung, origin);
  assertMatch(
    waits.summary,
    new RegExp(`^OpenViking at ${origin} takes connections but does not answer in time`),
  );
  assertMatch(waits.fix, /check the server's log .*restart it/);
  assertNotMatch(waits.fix, /\bstart the server/, "a hung server is not told to start");
  assertMatch(adviceFor(refused, origin).fix, /^start the server/, "a refused connection: start it");
  assertMatch(adviceFor(model, origin).summary, /its model refuses the server's requests/, "not our key");
  assertMatch(adviceFor(model, origin).fix, /^on the server, check ov\.conf's embedding section/);
  const edited = adviceFor({ kind: "redirect", status: 302, message: "m", location: "not a url" }, origin);
  assertEquals(edited.fix, `save the server's real address with \`${commandName()} install --url URL\``);
});

Deno.test("adviceFor a refused key: a root key is named as one; every refusal says where a user key comes from", () => {
  const r = adviceFor(failed(403, envelope("PERMISSION_DENIED", ROOT_KEY_REFUSAL)), origin);
  assertMatch(r.summary, /^the server refused the key \(HTTP 403\): it is OpenViking's root key/);
  const make = `make a user key with it (README: "Server with API keys") and give install that: \``;
  assertTrue(r.fix.startsWith(make), r.fix);
  const w = adviceFor(failed(401, envelope("UNAUTHENTICATED", "Invalid API key")), origin);
  assertEquals(w.summary, "the server refused the key (HTTP 401): Invalid API key");
  assertMatch(w.fix, /or you with the server's root key \(README: "Server with API keys"\)/);
  assertMatch(w.fix, /`ov admin register-user ACCOUNT USER`/);
});

Deno.test("adviceFor: a key or an address set in the environment is corrected or unset there, not saved again", () => {
  const refused = failed(401, envelope("UNAUTHENTICATED", "Invalid API Key"));
  assertMatch(adviceFor(refused, origin, { HOME: "/h" }).fix, /^save your OpenViking user's key/);
  const fromEnv = adviceFor(refused, origin, { HOME: "/h", OPENVIKING_API_KEY: "wrong" }).fix;
  assertMatch(fromEnv, /^correct or unset OPENVIKING_API_KEY/);
  assertNotMatch(fromEnv, /wrong/, "never the key itself");
  // install --url saves to ovcli.conf, which OPENVIKING_URL overrides: that fix alone would change nothing.
  const down = failure("unreachable", 0, { code: "CONNECT", message: `cannot reach ${origin}` });
  assertMatch(adviceFor(down, origin, { HOME: "/h" }).fix, /^start the server/);
  const envUrl = adviceFor(down, origin, { HOME: "/h", OPENVIKING_URL: origin }).fix;
  assertMatch(
    envUrl,
    /^start the server .*, or correct OPENVIKING_URL \(set in your environment, it wins over/,
  );
  assertMatch(envUrl, /or unset it and save its address: `.* install --url http:\/\/HOST:1933`; writes wait/);
});

Deno.test("adviceFor: a reply too large and one not OpenViking's both mean something else answers there", () => {
  const big = adviceFor(failure("too-large", 200, { code: "TOO_LARGE", message: "too big" }), origin);
  const foreign = adviceFor(failed(200, "<html><title>nginx</title></html>"), origin);
  assertEquals(big.fix, foreign.fix);
  assertMatch(big.fix, /^check what answers at that address .*install --url URL`; writes wait/);
  assertEquals(big.summary, `${origin} sent a reply larger than this plugin reads: too big`);
});
