import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { tempDir } from "../tests/support/temp.ts";
import { CREDENTIALS } from "../tests/support/credentials.ts";
import { createLogger } from "./log.ts";
import { scrub } from "./redact.ts";

Deno.test("scrub masks secret fields and the key wherever it appears", () => {
  const out = scrub({
    apiKey: "k-123456",
    nested: { msg: "sent k-123456 to server", authorization: "Bearer abc" },
    tokens: 5,
  }, ["k-123456"]);
  assertEquals(out, {
    apiKey: "***",
    nested: { msg: "sent *** to server", authorization: "***" },
    tokens: 5,
  });
});

Deno.test("logger: off by default; when on, JSONL lines, 0600, no secret", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/logs/x.log`;
  const off = createLogger({ enabled: false, path, source: "t" });
  off.stage("nothing");
  await off.flush();
  assertEquals(await Deno.stat(path).catch(() => null), null);
  const log = createLogger({ enabled: true, path, source: "kimicode:stop", secrets: ["super-secret-key"] });
  log.stage("start", { session: "s1" });
  log.stage("error", { message: "failed with super-secret-key" });
  await log.flush();
  const lines = (await Deno.readTextFile(path)).trim().split("\n").map((l) => JSON.parse(l));
  assertEquals(lines.map((l) => l.stage), ["start", "error"]);
  assertEquals(lines[0].source, "kimicode:stop");
  assertTrue(!(await Deno.readTextFile(path)).includes("super-secret-key"));
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
});

Deno.test("logger: no credential of any format reaches the log, even in a warning that quotes a file's value", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/x.log`;
  const log = createLogger({ enabled: true, path, source: "kimicode:user-prompt-submit" });
  log.stage("config-warnings", {
    warnings: CREDENTIALS.map((c) =>
      `ovcli.conf plugin "recallLimit": invalid value ${JSON.stringify(c.text)}`
    ),
  });
  log.stage("done", { outcome: `error: ${CREDENTIALS.map((c) => c.text).join("\n")}` });
  await log.flush();
  // The lines as their readers see them: JSON decoded (a key block's newlines are escapes on disk).
  const lines = (await Deno.readTextFile(path)).trim().split("\n").map((l) => JSON.parse(l));
  const text = lines.map((l) => [l.outcome ?? "", ...(l.warnings ?? [])].join("\n")).join("\n");
  assertEquals(CREDENTIALS.filter((c) => text.includes(c.secret)).map((c) => c.rule), []);
  assertTrue(text.includes("[REDACTED]"), "the texts were logged, redacted");
});

Deno.test("logger: a log path that is a link is never followed: the linked file stays as it was", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  const target = `${dir.path}/users-notes.txt`;
  await Deno.writeTextFile(target, "my notes\n");
  await Deno.symlink(target, `${dir.path}/x.log`);
  const log = createLogger({ enabled: true, path: `${dir.path}/x.log`, source: "t" });
  log.stage("start"); // before: appended to the user's file
  await log.flush();
  assertEquals(await Deno.readTextFile(target), "my notes\n");
});
