/**
 * Found under load (Kimi 0.41.0 over ACP, both cores busy): Stop fired before Kimi had written the turn to the
 * journal, the worker read nothing new and captured nothing, and `kimi -p` never fires another hook for that
 * session. The Stop worker now waits (bounded by OPENVIKING_CAPTURE_WAIT_MS) for the turn to show up.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { readState } from "../../memory/state.ts";

const SESSION = "session_1a7e0000-0000-4000-8000-00000000a11e";

Deno.test("Stop before the turn is in the journal: the capture waits for it and captures it", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = {
    HOME: dir.path,
    KIMI_CODE_HOME: `${dir.path}/.kimi-code`,
    OPENVIKING_URL: fake.url,
    OPENVIKING_CAPTURE_WAIT_MS: "8000",
    PATH: Deno.env.get("PATH") ?? "/usr/bin",
  };
  const stop = () =>
    hookIn("stop", {
      env,
      stdin: JSON.stringify({ hook_event_name: "Stop", session_id: SESSION, cwd: dir.path }),
    });
  const state = () => readState(`${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json`);
  const j = new JournalBuilder();
  j.simpleTurn("first question about the release notes", "first answer: they live in CHANGES.md");
  await placeJournal(dir.path, SESSION, j.toString());
  await stop();
  assertEquals((await state()).capturedKeys.length, 2);
  // The second turn ends and Stop fires — but Kimi writes the turn to the journal only a second later.
  const second = stop();
  await new Promise((r) => setTimeout(r, 1000));
  j.simpleTurn("second question: who reviews them?", "second answer: the release manager");
  await placeJournal(dir.path, SESSION, j.toString());
  await second;
  assertEquals(fake.messages(`kc-${SESSION}`).map((m) => `${m.turn_id}:${m.role}`), [
    "0:user",
    "0:assistant",
    "1:user",
    "1:assistant",
  ]);
});
