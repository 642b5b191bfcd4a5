/**
 * A nearly full disk under ~/.openviking (a small tmpfs left a few pages): a write failure never causes a
 * resend and no temp file lingers. Needs a tmpfs mount (root with CAP_SYS_ADMIN on Linux).
 */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { pathsUnder, world } from "./world.ts";

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
