/** The campaign's audit (audit.ts) on a case it once miscounted: it must not fail a schedule that lost nothing. */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { tempDir } from "../support/temp.ts";
import { Budget, createClient } from "../../openviking/client.ts";
import { JournalBuilder } from "../support/journal.ts";
import { sendMessages } from "../../openviking/queue.ts";
import { placeJournal } from "../support/hook-context.ts";
import { messagesOf } from "../../scripts/turns.ts";
import { audit } from "./audit.ts";
import { Processes } from "./procs.ts";

Deno.test("audit: an answer a forced capture took open and the next capture finished is delivered, in parts", async () => {
  // A forced capture that starts late (a loaded machine boots the hook after the campaign's hold) finds the
  // next turn begun, takes it open, and the capture after it sends only what the answer gained (ARCHITECTURE
  // decision 8): the audit used to call that "lost" plus "a message the journal's closed turns do not".
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const journal = new JournalBuilder().simpleTurn("what is the question", "an answer of some words");
  const journalPath = await placeJournal(dir.path, "session_p", journal.toString());
  const [user, answer] = await messagesOf(journalPath, { maxLength: 24_000, redact: true });
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
  for (const m of [user, { ...answer, content: "an answer of" }, { ...answer, content: " some words" }]) {
    await sendMessages(client, "kc-session_p", [m], {
      budget: new Budget(5000),
      pendingDir: `${dir.path}/p`,
    });
  }
  const input = {
    home: dir.path,
    sessionId: "session_p",
    journalPath,
    fake,
    procs: new Processes(dir.path, {}),
  };
  const r = await audit({
    ...input,
    abandoned: 0,
    apiKey: "k",
    userFiles: {},
    snapshots: { files: 0, problems: [] },
  });
  const counts = [r.expected, r.delivered, r.unexpected, r.duplicates, r.outOfOrder];
  assertEquals(counts, [2, 2, 0, 0, 0], r.violations.join("\n"));
});
