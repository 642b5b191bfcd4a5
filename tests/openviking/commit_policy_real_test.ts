/**
 * The commit policy reaches the real OpenViking: under `balanced` a short turn's Stop leaves the session
 * uncommitted and sets its `auto_commit_policy` (idle commit only) through `PATCH …/config`, which the server
 * accepts and reports back.
 */

import { assertEquals } from "../support/assert.ts";
import { startRealOrSkip } from "../support/real-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { readState } from "../../memory/state.ts";
import { IDLE_COMMIT_SECONDS } from "../../openviking/sessions.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
const SESSION = "session_5e1d2c3b-0a9f-4e8d-b7c6-00000000c0de";

Deno.test({
  name: "real OpenViking: balanced sets the session's idle commit (PATCH accepted), commits at SessionEnd",
  ignore: REAL === "0",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const server = await startRealOrSkip("the commit policy on the real server");
  if (!server) return;
  try {
    await using dir = await tempDir();
    const env = sandboxEnv(dir.path, server.url, {
      OPENVIKING_COMMIT_POLICY: "balanced",
      OPENVIKING_CAPTURE_WAIT_MS: "0",
      OPENVIKING_TIMEOUT_MS: "20000",
    });
    const stdin = (name: string) =>
      JSON.stringify({ hook_event_name: name, session_id: SESSION, cwd: dir.path });
    const j = new JournalBuilder().simpleTurn("which port does staging use?", "staging listens on 6543");
    await placeJournal(dir.path, SESSION, j.toString());
    await hookIn("stop", { env, stdin: stdin("Stop") });
    const meta = async () => {
      const res = await fetch(`${server.url}/api/v1/sessions/kc-${SESSION}`);
      return (await res.json() as { result: Record<string, unknown> }).result;
    };
    const after = await meta();
    assertEquals(after.commit_count, 0, "a short turn is not committed yet");
    assertEquals(after.auto_commit_policy, {
      pending_token_threshold: 0,
      message_count_threshold: 0,
      idle_timeout_seconds: IDLE_COMMIT_SECONDS,
      keep_recent_count: 0,
      min_commit_interval_seconds: 0,
    });
    const state = await readState(`${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json`);
    assertEquals(state.idleCommit, "set");
    await hookIn("session-end", { env, stdin: stdin("SessionEnd") });
    assertEquals((await meta()).commit_count, 1);
  } finally {
    await server.stop();
  }
});
