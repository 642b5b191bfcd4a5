/**
 * A nearly full disk under ~/.openviking (a small tmpfs left a few pages): a write failure never causes a
 * resend and no temp file lingers. Needs a tmpfs mount (root with CAP_SYS_ADMIN on Linux). A file size limit
 * (`ulimit -f`): the hooks that print still exit 0.
 */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { cliArgs, denoEnv, runProcess } from "../support/run.ts";
import { pathsUnder, stdinOf, world } from "./world.ts";

function canMountTmpfs(): boolean {
  if (Deno.build.os !== "linux") return false;
  const dir = Deno.makeTempDirSync({ prefix: "ovk-mount-" });
  try {
    const ok =
      new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir], stderr: "null" })
        .outputSync().success;
    if (ok) new Deno.Command("umount", { args: [dir] }).outputSync();
    return ok;
  } catch {
    return false;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

/** Fills `dir`'s file system, leaving `room` bytes (pages of 4 KiB on tmpfs). */
async function fill(dir: string, room: number): Promise<void> {
  const filler = await Deno.open(`${dir}/filler`, { write: true, create: true, truncate: true });
  try {
    for (;;) await filler.write(new Uint8Array(4096));
  } catch {
    // full
  } finally {
    filler.close();
  }
  await Deno.truncate(`${dir}/filler`, Math.max(0, (await Deno.stat(`${dir}/filler`)).size - room));
}

Deno.test({
  name:
    "disk nearly full under ~/.openviking: no message is sent twice, none is lost, no temp file lingers " +
    "(needs a tmpfs mount: root + CAP_SYS_ADMIN)",
  ignore: !canMountTmpfs(),
  async fn() {
    for (const pages of [0, 1, 2, 3, 4, 6, 8]) {
      await using w = await world({
        env: { OPENVIKING_TIMEOUT_MS: "2000", OPENVIKING_WRITE_PATH_ASYNC: "0" },
      });
      const { fake } = w;
      const ov = `${w.home}/.openviking`;
      await Deno.mkdir(ov, { mode: 0o700 });
      await new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", ov] })
        .output();
      try {
        const j = new JournalBuilder();
        const addTurn = async () => {
          const n = j.turnId + 1;
          await w.journal(
            j.simpleTurn(`question ${n}: where do the artefacts go?`, `answer ${n}: dist/`).toString(),
          );
        };
        // Some state first (as in a running session), then the disk fills up with a little room left.
        await addTurn();
        await w.hook("stop");
        await fill(ov, pages * 4096);
        for (const down of [false, true, false, true, false]) {
          await addTurn();
          if (down) fake.fault({ route: "*", status: 503 });
          else fake.clearFaults();
          await w.hook("stop");
          await w.hook("session-start");
        }
        // The disk is freed and the server is up: everything is delivered, exactly once each.
        fake.clearFaults();
        await Deno.remove(`${ov}/filler`);
        await w.hook("stop");
        assertEquals((await w.cli("replay")).code, 0);
        const got = w.stored();
        const want = [0, 1, 2, 3, 4, 5].flatMap((t) => [`${t}:user`, `${t}:assistant`]);
        assertEquals(got, want, `${pages} page(s) of room: each message once, in order`);
        assertEquals(
          pathsUnder(ov, (p) => p.endsWith(".tmp")),
          [],
          `${pages} page(s) of room: no temp file left`,
        );
      } finally {
        await new Deno.Command("umount", { args: [ov] }).output();
      }
    }
  },
});

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
