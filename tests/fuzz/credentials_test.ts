/**
 * Fuzzing the credential formats through every text path (issue 20 §1): real-format credentials with their
 * random part drawn anew, amid random and hostile text, with LF or CRLF lines, alone or inside a JSON log
 * line — never left in what redaction returns, the recall query, a captured message (user or assistant), a
 * kept prompt, the ledger's snippet, or a logged or printed text (scrub).
 */

import fc from "fast-check";
import { assertEquals } from "../support/assert.ts";
import { redact } from "../../lib/redact.ts";
import { scrub, scrubText } from "../../lib/scrub.ts";
import { snippet } from "../../memory/ledger.ts";
import { emptyState } from "../../memory/state.ts";
import { recallQuery } from "../../memory/query.ts";
import { keepPrompt } from "../../memory/prompt-fallback.ts";
import { prepareText } from "../../kimi/journal/clean.ts";
import { credentialText, params } from "./arbitraries.ts";

const capture = { maxLength: 24_000, redact: true };

/** Every text path a prompt or an answer takes out of the process, by name. */
const PATHS: Record<string, (text: string) => string> = {
  redact,
  "recall query": (t) => recallQuery(t, true),
  "ledger snippet": (t) => snippet(recallQuery(t, true)),
  "captured user message": (t) => prepareText(t, "user", capture).text,
  "captured assistant message": (t) => prepareText(t, "assistant", capture).text,
  "kept prompt": (t) => keepPrompt(emptyState(), t, 0, capture).fallbackPrompts.map((p) => p.text).join(),
  "log text": (t) => scrubText(t),
  "log record": (t) => JSON.stringify(scrub({ outcome: t, warnings: [t] })),
};

Deno.test("fuzz: no drawn credential survives any text path, whatever surrounds it", () => {
  fc.assert(
    fc.property(credentialText, fc.boolean(), ({ text, secrets }, asJson) => {
      const input = asJson ? JSON.stringify({ level: "info", msg: text }) : text;
      const leaks = Object.entries(PATHS).flatMap(([path, take]) => {
        const out = take(input);
        return secrets.filter((s) => out.includes(s) || out.includes(JSON.stringify(s).slice(1, -1)))
          .map((s) => `${path}: ${s}`);
      });
      assertEquals(leaks, [], JSON.stringify(input).slice(0, 400));
    }),
    params(1500),
  );
});
