/**
 * A signal at the moments the fault campaign cannot reach, each a deterministic process test (rows): kill -9
 * of a capture worker during its second batch (the campaign's sessions never fill one) leaves the first
 * recorded, so the next capture sends none of it again; SIGSTOP of one during its send while a later Stop and
 * a session start run, then SIGCONT (its send times out when it runs again), stores each message once. The
 * capture and the replay after the signal run in-process.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import type { FakeOpenViking, FakeOptions } from "../support/fake-openviking.ts";
import { startCli } from "../support/run.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import type { SessionState } from "../../memory/state.ts";
import { readLedger, REPLAY_FILE } from "../../memory/ledger.ts";
import { ledgerDir } from "../../lib/paths.ts";
import { stdinOf, waitFor, world } from "../hooks/world.ts";

const NO_SIGNALS = Deno.build.os === "windows";
const BATCH = "POST /api/v1/sessions/:id/messages/batch";
const ONE = "POST /api/v1/sessions/:id/messages";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  name: string;
  signal: "SIGKILL" | "SIGSTOP";
  turns: number;
  fake?: FakeOptions;
  /** Faults that hold the request to signal at in flight. */
  faults: (fake: FakeOpenViking) => void;
  at: (route: string) => boolean;
  /** What the state records after a kill, and its value. */
  recorded?: [(st: SessionState) => unknown, unknown];
  /** Every message once; else the turns below this number once, duplicates only from lost replies. */
  exact: true | number;
  /** SIGSTOP: the messages the backlog's replay sends again (only what the server does not hold). */
  resent?: number;
}

const nth = (route: string, n: number) => {
  let seen = 0;
  return (r: string) => r === route && ++seen === n;
};
const ROWS: Row[] = [
  {
    name: "during its second batch: the first stays acknowledged", // 120 messages: batches of 100 + 20
    signal: "SIGKILL",
    turns: 60,
    faults: (f) => f.fault({ route: BATCH, delayMs: 1500, skip: 1, times: 1 }), // the second is slow to land
    at: nth(BATCH, 2),
    recorded: [(st) => st.ackedBelow, 50],
    exact: 50,
  },
  ...([[BATCH, {}, "its batch (stopped past the unsure time)", 0], [
    ONE,
    { noBatch: 404 },
    "its first message to a server without the batch endpoint",
    3,
  ]] as const).map(([route, fake, name, resent]): Row => ({
    name: `during ${name}: each message stored once`,
    signal: "SIGSTOP",
    turns: 2,
    fake,
    faults: (f) => f.fault({ route, delayMs: 300, times: 1 }),
    at: (r) => r === route,
    exact: true,
    resent,
  })),
];

for (const k of ROWS) {
  const what = k.signal === "SIGKILL" ? "kill -9" : "SIGSTOP, then SIGCONT,";
  Deno.test({ name: `${what} of a capture worker ${k.name}`, ignore: NO_SIGNALS }, async () => {
    const env = { OPENVIKING_TIMEOUT_MS: "1000", [WORKER_ENV]: "1" };
    await using w = await world({ fake: k.fake, env });
    await w.turns(k.turns);
    k.faults(w.fake);
    let hit = false;
    w.fake.onRequest = (r) => hit ||= k.at(r.route);
    const worker = await startCli(["hook", "stop"], w.env, stdinOf("stop"));
    await waitFor("the request to signal at", () => hit, 20_000);
    worker.kill(k.signal);
    let turns = k.turns;
    if (k.signal === "SIGSTOP") {
      await w.turns(1);
      turns++;
      const second = await startCli(["hook", "stop"], w.env, stdinOf("stop"));
      await w.hook("session-start");
      await sleep(3000);
      worker.kill("SIGCONT");
      await second.status;
    }
    await worker.status;
    w.fake.onRequest = undefined;
    if (k.recorded) assertEquals(k.recorded[0](await w.state()), k.recorded[1], "the accepted is recorded");
    await w.hook("stop");
    assertEquals((await w.state()).ackedBelow, turns);
    await sleep(1600); // let the signalled worker's slow request land too
    const all = Array.from({ length: turns }, (_, t) => [`${t}:user`, `${t}:assistant`]).flat();
    const stored = w.stored();
    assertEquals([...new Set(stored)], all, "every message, first copies in order");
    if (k.exact === true) assertEquals(stored, all, "each once");
    else {
      const acked = stored.filter((m) => Number(m.split(":")[0]) < (k.exact as number));
      assertEquals(acked.length, 2 * k.exact, "acknowledged: once");
      assertTrue(stored.length - all.length <= w.fake.lostReplyMessages, "duplicates only from lost replies");
    }
    if (k.resent !== undefined) {
      // The window was reached: the stopped worker's send timed out (its 4 messages queued unsure), the second
      // Stop waited for its lock and took the third turn alone, the replay resent only what the server lacked.
      const dir = ledgerDir(w.env);
      const runs = (await readLedger(dir, w.session)).flatMap((e) =>
        e.kind === "capture" ? [[e.turns, e.sent, e.queued, e.cause?.code ?? ""]] : []
      );
      assertEquals(runs, [[2, 0, 4, "TIMEOUT"], [1, 2, 0, ""], [0, 0, 0, ""]]);
      const replays = (await readLedger(dir, REPLAY_FILE)).flatMap((e) =>
        e.kind === "replay" ? [e.messages] : []
      );
      assertEquals(replays, [k.resent], "only what the server did not hold was sent again");
    }
  });
}
