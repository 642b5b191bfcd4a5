/**
 * Issue #11, finding 5, through the real `hook stop` (its detached worker, production flags, real stdin, the
 * fake OpenViking): a message that mentions an injected tag in prose is captured whole. An unclosed tag was
 * taken to run to the end of the text, so "Why does Kimi put `<system-reminder>` tags into my transcript? …"
 * was stored as "Why does Kimi put".
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { waitUntil } from "../support/kimi.ts";
import { tempDir } from "../support/temp.ts";
import { readState } from "../../memory/state.ts";

const SESSION = "session_5b0c1d2e-tags-4f5a-8b6c-mentioned0005";
const OV_SESSION = `kc-${SESSION}`;

const PROMPT = "Why does Kimi put <system-reminder> tags into my transcript? I never typed them.";
const ANSWER = "Kimi wraps what a hook prints in a <hook_result> element before the model sees it. " +
  "You never typed those tags; the host adds them, and they are not shown on screen.";
// A mention and, later in the same text, a whole element: the element goes, the mention stays.
const PROMPT_WITH_ELEMENT =
  "So <system-reminder> is Kimi's? Here is one I copied: <system-reminder>\nToday is Monday.\n</system-reminder> — see?";
const PROMPT_WITH_ELEMENT_STORED = "So <system-reminder> is Kimi's? Here is one I copied:  — see?";
const ANSWER_UNCLOSED =
  'Yes. A <hook_result hook_event="UserPromptSubmit"> opener without its close is plain text, ' +
  "and so is a stray </system-reminder> on its own.";

Deno.test("hook stop: a prompt mentioning <system-reminder> and an answer mentioning <hook_result> are stored whole", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const journal = new JournalBuilder()
    .hookResult(
      "<openviking-context>\n- The user prefers tabs. (viking://user/default/memories/t.md)\n</openviking-context>",
    )
    .simpleTurn(PROMPT, ANSWER)
    .simpleTurn(PROMPT_WITH_ELEMENT, ANSWER_UNCLOSED);
  await placeJournal(dir.path, SESSION, journal.toString());
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
  const r = await hookIn("stop", {
    env,
    stdin: JSON.stringify({ hook_event_name: "Stop", session_id: SESSION, cwd: "/home/user/proj" }),
  });
  assertEquals(r.stdout, "");
  const statePath = `${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json`;
  await waitUntil(async () => (await readState(statePath)).lastCaptureAt, 20_000, "the worker's capture", 50);
  assertEquals(
    fake.messages(OV_SESSION).map((m) => ({ turn_id: m.turn_id, role: m.role, content: m.content })),
    [
      { turn_id: "0", role: "user", content: PROMPT },
      { turn_id: "0", role: "assistant", content: ANSWER },
      { turn_id: "1", role: "user", content: PROMPT_WITH_ELEMENT_STORED },
      { turn_id: "1", role: "assistant", content: ANSWER_UNCLOSED },
    ],
  );
  assertEquals(fake.sessions.get(OV_SESSION)?.commits, 1);
});
