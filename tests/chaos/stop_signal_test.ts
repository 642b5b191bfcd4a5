/**
 * SIGSTOP of a capture worker while its send is in flight (the server answers meanwhile), a later Stop and a
 * session start while it is stopped, then SIGCONT (its send times out when it runs again): each message is stored
 * once; the ledger shows the window was reached (the stopped send timed out and was queued unsure, the later Stop
 * waited for its lock, the replay resent only what the server lacked). Only a process can be stopped.
 */

import { assertEquals } from "../support/assert.ts";
import { readLedger, REPLAY_FILE } from "../../memory/ledger.ts";
import { ledgerDir } from "../../lib/paths.ts";
import type { FakeOptions } from "../support/fake-openviking.ts";
import { JournalBuilder } from "../support/journal.ts";
import { startCli } from "../support/run.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { stdinOf, waitFor, world } from "../hooks/world.ts";

const STORED = ["0:user", "0:assistant", "1:user", "1:assistant", "2:user", "2:assistant"];

for (
  const [name, fake, route, stopMs, resent] of [
    ["batch (stopped past the unsure time)", {}, "POST /api/v1/sessions/:id/messages/batch", 3000, 0],
    [
      "first message to a server without the batch endpoint",
      { noBatch: 404 },
      "POST /api/v1/sessions/:id/messages",
      3000,
      3,
    ],
  ] as [string, FakeOptions, string, number, number][]
) {
  Deno.test({
    name: `SIGSTOP of a capture worker during its ${name}, then SIGCONT: each message stored once`,
    ignore: Deno.build.os === "windows",
  }, async () => {
    await using w = await world({ fake, env: { OPENVIKING_TIMEOUT_MS: "1000", [WORKER_ENV]: "1" } });
    const journal = new JournalBuilder().simpleTurn("first question about tabs", "first answer about tabs")
      .simpleTurn("second question about spaces", "second answer about spaces");
    await w.journal(journal.toString());
    w.fake.fault({ route, delayMs: 300, times: 1 });
    let hit = false;
    w.fake.onRequest = (r) => hit ||= r.route === route;
    const worker = await startCli(["hook", "stop"], w.env, stdinOf("stop"));
    await waitFor("the request", () => hit, 20_000);
    worker.kill("SIGSTOP");
    await w.journal(journal.simpleTurn("third question about width", "third answer about width").toString());
    const second = await startCli(["hook", "stop"], w.env, stdinOf("stop"));
    await w.hook("session-start");
    await new Promise((r) => setTimeout(r, stopMs));
    worker.kill("SIGCONT");
    await worker.status;
    await second.status;
    w.fake.onRequest = undefined;
    await w.hook("stop");
    assertEquals(w.stored(), STORED, "each once, in order");
    // The window was reached: the stopped worker's send timed out (its 4 messages queued unsure), the second Stop
    // waited for its lock and took the third turn alone, and the backlog's replay resent only what the server
    // did not hold.
    const dir = ledgerDir(w.env);
    const runs = (await readLedger(dir, w.session)).flatMap((e) =>
      e.kind === "capture" ? [[e.turns, e.sent, e.queued, e.cause?.code ?? ""]] : []
    );
    assertEquals(runs, [[2, 0, 4, "TIMEOUT"], [1, 2, 0, ""], [0, 0, 0, ""]]);
    const replays = (await readLedger(dir, REPLAY_FILE)).flatMap((e) =>
      e.kind === "replay" ? [e.messages] : []
    );
    assertEquals(replays, [resent], "only what the server did not hold was sent again");
  });
}
