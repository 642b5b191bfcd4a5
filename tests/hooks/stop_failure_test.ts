/**
 * `hook stop-failure`: Kimi fires StopFailure — never Stop — when a turn fails (provider error, no model
 * chosen). The real entry point with real stdin, against the fake OpenViking, on the journals recorded from
 * the real CLI for a failed `kimi -p` turn: the prompt reaches OpenViking alone, at once, and is committed;
 * a capture after it sends nothing twice.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { tempDir } from "../support/temp.ts";
import { readState } from "../../memory/state.ts";

const SESSION = "session_5fd1c2a4-3c1e-4d0a-9b1e-0f7a35c0e001";
const PROMPT = "this will FAIL at the provider";

for (const variant of ["2.1.0", "0.41.0", "0.41.0-legacy"]) {
  Deno.test(`hook stop-failure (${variant} failed turn): the prompt alone reaches OpenViking, committed`, async () => {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const journal = new URL(`../fixtures/journals/${variant}/failed/wire.jsonl`, import.meta.url);
    await placeJournal(dir.path, SESSION, await Deno.readTextFile(journal));
    const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "500" });
    const stdin = JSON.stringify({
      hook_event_name: "StopFailure",
      session_id: SESSION,
      cwd: "/home/user/proj",
      error_type: "APIStatusError",
      error_message: "400 mock request rejected",
    });
    const r = await hookIn("stop-failure", { env, stdin });
    assertEquals(r.stdout, "");
    const ov = `kc-${SESSION}`;
    const state = `${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json`;
    assertEquals((await readState(state)).lastCaptureEvent, "stop-failure");
    const stored = () => fake.messages(ov).map((m) => [m.turn_id, m.role, m.content]);
    assertEquals(stored(), [["0", "user", PROMPT]]);
    assertEquals(fake.sessions.get(ov)?.commits, 1);

    // Legacy print mode fires SessionEnd right after: nothing is sent twice.
    const end = await hookIn("session-end", {
      env,
      stdin: JSON.stringify({ hook_event_name: "SessionEnd", session_id: SESSION, cwd: "/home/user/proj" }),
    });
    assertEquals(end.stdout, "");
    assertEquals((await readState(state)).lastCaptureEvent, "session-end");
    assertEquals(stored(), [["0", "user", PROMPT]]);
    assertEquals(fake.sessions.get(ov)?.commits, 1);
  });
}
