/** A file size limit (`ulimit -f`): the hooks that print still exit 0 and print their memories. */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { cliArgs, denoEnv, runProcess } from "../support/run.ts";
import { stdinOf, world } from "./world.ts";

Deno.test({
  name: "a file size limit (ulimit -f 1): the prompt and session-start hooks still exit 0, memories printed",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using w = await world();
    const text = "The build writes its artefacts to dist/, never to the source tree. ".repeat(40);
    w.fake.context = { entries: [{ uri: "viking://user/default/memories/build.md", text, score: 0.9 }] };
    const run = async (event: string, limit: string, extra = {}, session?: string) =>
      await runProcess("sh", [
        "-c",
        'ulimit -f "$0"; exec "$@"',
        limit,
        Deno.execPath(),
        ...await cliArgs(),
        "hook",
        event,
      ], {
        env: { ...denoEnv(), ...w.env },
        clearEnv: true,
        stdin: stdinOf(event, session, extra),
        timeoutMs: 60_000,
      });
    const prompt = { prompt: "where do the artefacts go?" };
    // Deno's own module cache is written on a first run: warmed without the limit, in another session.
    for (const event of ["session-start", "user-prompt-submit"]) {
      await run(event, "unlimited", prompt, "warm");
    }
    for (const event of ["session-start", "user-prompt-submit"]) {
      const r = await run(event, "1", event === "user-prompt-submit" ? prompt : {});
      assertEquals(r.code, 0, `${event}: ${r.stderr}`);
      if (event === "user-prompt-submit") assertMatch(r.stdout, /artefacts to dist/);
    }
  },
});
