/** The advice for a recorded cause: the same words and fix as for the failure it was recorded from. */

import { assertEquals } from "../support/assert.ts";
import { adviceFor, adviceForCause, causeOf } from "../../runtime/advice.ts";
import { classifyReply } from "../../runtime/reply.ts";
import { commandName } from "../../runtime/self.ts";

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

Deno.test("adviceForCause: a recorded target that is not a URL (an edited file) gives the general fix, never a throw", () => {
  const advice = adviceForCause(
    { kind: "redirect", status: 302, message: "m", location: "not a url" },
    origin,
  );
  assertEquals(advice.fix, `save the server's real address with \`${commandName()} install --url URL\``);
});
