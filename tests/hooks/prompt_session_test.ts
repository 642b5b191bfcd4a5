/**
 * A session's prompts in-process (`runHook`) against the fake OpenViking: a prompt whose recall failed says
 * so in the ledger and in `status`.
 */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { DUPLICATE_WINDOW_MS } from "../../memory/prompt.ts";
import { world } from "./world.ts";

Deno.test("prompt session: a prompt whose recall or profile failed says why in its ledger line and in status", async () => {
  const key = "sk-quoted-back-4711";
  await using w = await world({ env: { OPENVIKING_API_KEY: key } });
  const { fake } = w;
  const prompt = (text: string, more = {}) => w.run("user-prompt-submit", { prompt: text }, more);
  const ledgerFile = `${w.home}/.openviking/ledger/kimicode/${w.session}.jsonl`;
  const ledger = async () =>
    (await Deno.readTextFile(ledgerFile)).trim().split("\n").map((l) => JSON.parse(l));
  const lastError = async () => {
    const r = await w.cli("status", "--json");
    assertEquals(r.code, 0, r.stderr);
    return JSON.parse(r.stdout).sessions.find((s: { kimiSessionId: string }) => s.kimiSessionId === w.session)
      ?.lastError;
  };

  // Every route answers 503, its message quoting the key back: the ledger keeps the failure, not the key.
  fake.fault({ route: "*", status: 503, error: { message: `overloaded, key ${key}` } });
  assertEquals(await prompt("how should I indent this file?"), "");
  fake.clearFaults();
  // The server is not there at all.
  assertEquals(await prompt("and the tests folder?", { OPENVIKING_URL: "http://127.0.0.1:9" }), "");
  const [busy, gone] = await ledger();
  assertEquals([busy.path, busy.failure?.kind, busy.failure?.status], ["none", "server", 503]);
  assertMatch(busy.failure.message, /overloaded, key \*\*\*/);
  assertEquals([gone.path, gone.failure?.kind, gone.failure?.status], ["none", "unreachable", 0]);
  assertMatch(gone.failure.message, /127\.0\.0\.1:9/);
  const error = await lastError();
  assertEquals(error?.kind, "unreachable");
  assertMatch(error?.fix ?? "", /start the server|install --url/);

  // The same prompt again, recall answering now but not the profile (its routes refuse the key): the failed
  // recall was not kept for it, the server is asked again and the memory prints; the line says why there
  // was no profile.
  fake.fault({ route: "GET /api/v1/system/status", status: 401 });
  fake.fault({ route: "GET /api/v1/fs/ls", status: 401 });
  await new Promise((r) => setTimeout(r, DUPLICATE_WINDOW_MS)); // not the same hook fired twice
  assertMatch(await prompt("and the tests folder?"), /User prefers tabs/);
  fake.clearFaults();
  const third = (await ledger())[2];
  assertEquals([third.path, third.profile, third.failure?.kind, third.failure?.status], [
    "context",
    "unavailable",
    "auth",
    401,
  ]);
  assertEquals((await lastError())?.kind, "auth");
  // Back to normal: no failure on the line.
  await prompt("what about the build?");
  assertEquals((await ledger())[3].failure, undefined);
  assertEquals(
    (await Deno.readTextFile(ledgerFile)).includes(key),
    false,
  );
});
