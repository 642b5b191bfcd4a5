/**
 * A turn of 160 KB of CRLF lines once spun a Stop worker for minutes (a quadratic redaction rule). Two real
 * Stop workers at once deliver each message once: tests/chaos/campaign.ts, its "two stops" action.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { world } from "./world.ts";

const REDACTED = "[REDACTED]";

/** A line of the pasted log and what redaction makes of it. */
type Line = [raw: string, stored: string];

/** A pasted 160 KB CRLF deploy log: secret `.env` lines, an ordinary one, then one long run of blank lines. */
function pastedLog(): { raw: string; stored: string } {
  const blanks: Line[] = Array.from({ length: 65_536 }, (_, i) => (i % 2 ? [" ", " "] : ["", ""]));
  const lines: Line[] = [
    ["Deploy log, pasted as it came:", "Deploy log, pasted as it came:"],
    ["PASSWORD=hunter2-correct-horse", `PASSWORD=${REDACTED}`],
    ["export API_TOKEN = tok-0123456789abcdef", `export API_TOKEN = ${REDACTED}`],
    ["PATH=/usr/local/bin:/usr/bin", "PATH=/usr/local/bin:/usr/bin"],
    ...blanks,
    ["end of log: why did step 3 fail?", "end of log: why did step 3 fail?"],
  ];
  return {
    raw: lines.map(([raw]) => raw).join("\r\n"),
    stored: lines.map(([, stored]) => stored).join("\r\n"),
  };
}

const ANSWER =
  "Step 3 failed at the upload.\r\nIt used Bearer abcdef0123456789xyz\r\nRetry with the new key.";
const ANSWER_STORED = `Step 3 failed at the upload.\r\nIt used Bearer ${REDACTED}\r\nRetry with the new key.`;

/** A world whose session journal holds an ordinary turn, then the turn with the pasted log. */
async function crlfWorld() {
  // The whole pasted log is one message: no cut at the default 24 000 characters hides what redaction did.
  const w = await world({ env: { OPENVIKING_CAPTURE_MAX_LENGTH: "1000000" } });
  const log = pastedLog();
  assertTrue(log.raw.length >= 160 * 1024 && log.raw.length < 170 * 1024, `${log.raw.length} chars`);
  await w.journal(
    new JournalBuilder().simpleTurn("where does the deploy script live?", "In scripts/deploy.sh, run by CI.")
      .simpleTurn(log.raw, ANSWER).toString(),
  );
  const stored = () =>
    w.fake.messages(w.ov).map(({ turn_id, role, content }) => ({ turn_id, role, content }));
  const expected = [
    { turn_id: "0", role: "user", content: "where does the deploy script live?" },
    { turn_id: "0", role: "assistant", content: "In scripts/deploy.sh, run by CI." },
    { turn_id: "1", role: "user", content: log.stored },
    { turn_id: "1", role: "assistant", content: ANSWER_STORED },
  ];
  return Object.assign(w, { messages: stored, expected });
}

/** Generous bound for the whole Stop run; the quadratic rule took ~200 s. */
const STOP_BOUND_MS = 10_000;

Deno.test("hook stop, in-process: a turn with 160 KB of CRLF lines is delivered whole, redacted, in linear time", async () => {
  await using w = await crlfWorld();
  const t0 = performance.now();
  await w.hook("stop");
  const ms = performance.now() - t0;
  assertTrue(ms < STOP_BOUND_MS, `Stop took ${Math.round(ms)} ms (≥ ${STOP_BOUND_MS} ms: not linear)`);
  assertEquals([w.messages(), w.commits()], [w.expected, 1]);
  const st = await w.state();
  assertEquals([st.ackedBelow, st.lastCapture?.sent, st.lastCapture?.queued], [2, 4, 0]);
});
