/**
 * A file size limit (`ulimit -f`) under the hooks. A write past it raises SIGXFSZ, whose default action kills
 * the process; Deno writes its own caches (SQLite files in DENO_DIR) before our code runs, so no listener of
 * ours can stop that. The installed copy's launcher ignores the signal before it execs Deno: every write past
 * the limit then fails with EFBIG, which Deno's caches and our files handle like a full disk. A capture whose
 * small intent fits but whose bigger record does not keeps that intent on disk, so its turns are not sent
 * again. Run as Kimi runs a plugin's hooks: the registered command through `sh -c`, the limit set in that
 * shell, the copy's cache fresh at first.
 */

import { assertEquals } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { runProcess } from "../support/run.ts";
import { installSandbox } from "../install/helpers.ts";
import { runInstall } from "../../install/install.ts";
import { SESSION, stdinOf, waitFor } from "./world.ts";

Deno.test({
  name: "ulimit -f 1 on the installed copy's hooks: session start, recall and capture exit 0, nothing lost",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const [memory, uri] = [
      "The build writes its artefacts to dist/.",
      "viking://user/default/memories/build.md",
    ];
    fake.context = { entries: [{ uri, text: memory, score: 0.9 }] };
    const t = await installSandbox(dir.path, { OPENVIKING_URL: fake.url });
    await t.run(runInstall);
    const manifest = JSON.parse(await Deno.readTextFile(`${t.plugin}/kimi.plugin.json`));
    const command = (event: string) =>
      (manifest.hooks as { command: string }[]).find((h) => h.command.endsWith(` hook ${event}`))!.command;
    const env = { ...sandboxEnv(t.home, fake.url), PATH: "/usr/bin:/bin", KIMI_PLUGIN_ROOT: t.plugin };
    /** Runs `event`'s registered command as Kimi does, under `ulimit -f <limit>` (blocks of 512 B in dash). */
    const hook = async (event: string, limit: string, extra: Record<string, string> = {}) => {
      const r = await runProcess("/bin/sh", ["-c", `ulimit -f ${limit}; ${command(event)}`], {
        cwd: t.plugin,
        env: { ...env, ...extra },
        clearEnv: true,
        stdin: stdinOf(event, SESSION, { prompt: "where do the artefacts go?" }),
        timeoutMs: 60_000,
      });
      assertEquals([r.code, r.stderr], [0, ""], `${event} under ulimit -f ${limit}`);
      return r.stdout;
    };
    const builder = new JournalBuilder();
    const say = (n: number) =>
      placeJournal(t.home, SESSION, builder.simpleTurn(`question ${n}`, `answer ${n}`).toString());

    const printed = `<openviking-context>\n- ${memory} (${uri})\n</openviking-context>\n`;
    const batches = () => fake.requestsTo("POST /api/v1/sessions/:id/messages/batch").length;
    /** Past the intent's `askFrom` (2 × OPENVIKING_TIMEOUT_MS): the server's answer settles what went out. */
    const settle = () => new Promise((r) => setTimeout(r, 2500));

    // The copy's DENO_DIR is fresh: Deno's first cache writes go past the limit.
    await hook("session-start", "1");
    // Its detached worker lived under the limit too (inherited): it asked the server about extraction.
    await waitFor("the session start's worker", () => fake.requestsTo("GET /api/v1/tasks").length > 0);
    assertEquals(await hook("user-prompt-submit", "1"), printed, "recall printed, nothing else");
    // A capture's small intent fits under the limit, its bigger record after the send does not.
    await say(0);
    await hook("stop", "1");
    await waitFor("the stop's worker", () => batches() === 1);
    await settle();
    await say(1);
    await hook("stop", "1", { OPENVIKING_WRITE_PATH_ASYNC: "0" });
    await settle();
    // The limit gone: every turn reaches OpenViking, once each, in order.
    await say(2);
    await hook("stop", "unlimited", { OPENVIKING_WRITE_PATH_ASYNC: "0" });
    const stored = fake.messages(`kc-${SESSION}`).map((m) => m.content);
    assertEquals(stored, ["question 0", "answer 0", "question 1", "answer 1", "question 2", "answer 2"]);
    // Deno's caches warm now, under the limit again.
    assertEquals(await hook("user-prompt-submit", "1"), printed, "recall printed, warm");
  },
});
