/**
 * A nearly full disk under ~/.openviking (a small tmpfs, filled to leave a few pages): before, a queue entry
 * could be durable while the state write after it failed, so later runs sent those messages again (7, 9, 11
 * messages for 6), and every failed write left a 0-byte `.tmp` behind. Now a capture records its intent before
 * each request and stops when it cannot, so a write failure never causes a resend and no temp file lingers.
 * Needs a tmpfs mount (root with CAP_SYS_ADMIN on Linux); skipped elsewhere, with the reason in its name.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const SESSION = "session_d15cf011-0000-4000-8000-000000000001";
const OV_SESSION = `kc-${SESSION}`;

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

function tempsUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) {
      if (e.isDirectory) walk(`${d}/${e.name}`);
      else if (e.name.endsWith(".tmp")) out.push(`${d}/${e.name}`);
    }
  };
  walk(dir);
  return out;
}

Deno.test({
  name:
    "disk nearly full under ~/.openviking: no message is sent twice, none is lost, no temp file lingers " +
    "(needs a tmpfs mount: root + CAP_SYS_ADMIN)",
  ignore: !canMountTmpfs(),
  async fn() {
    for (const pages of [0, 1, 2, 3, 4, 6, 8]) {
      await using dir = await tempDir();
      await using fake = await FakeOpenViking.start();
      const ov = `${dir.path}/.openviking`;
      await Deno.mkdir(ov, { mode: 0o700 });
      await new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", ov] })
        .output();
      try {
        const env = {
          HOME: dir.path,
          KIMI_CODE_HOME: `${dir.path}/.kimi-code`,
          OPENVIKING_URL: fake.url,
          OPENVIKING_TIMEOUT_MS: "2000",
          OPENVIKING_CAPTURE_WAIT_MS: "0",
          OPENVIKING_WRITE_PATH_ASYNC: "0", // the capture runs in the hook process, so each run is over when it exits
          PATH: Deno.env.get("PATH") ?? "/usr/bin",
        };
        const hook = (event: string, name: string) =>
          hookIn(event, {
            env,
            stdin: JSON.stringify({ hook_event_name: name, session_id: SESSION, cwd: dir.path }),
          });
        const j = new JournalBuilder();
        const addTurn = async () => {
          const n = j.turnId + 1;
          j.simpleTurn(
            `question ${n}: where do the build artefacts go?`,
            `answer ${n}: into dist/, ignored by git`,
          );
          await placeJournal(dir.path, SESSION, j.toString());
        };
        // Some state first (as in a running session), then the disk fills up with a little room left.
        await addTurn();
        assertEquals((await hook("stop", "Stop")).stdout, "");
        await fill(ov, pages * 4096);
        for (const down of [false, true, false, true, false]) {
          await addTurn();
          if (down) fake.fault({ route: "*", status: 503 });
          else fake.clearFaults();
          assertEquals((await hook("stop", "Stop")).stdout, "");
          assertEquals((await hook("session-start", "SessionStart")).stdout, "");
        }
        // The disk is freed and the server is up: everything is delivered, exactly once each.
        fake.clearFaults();
        await Deno.remove(`${ov}/filler`);
        assertEquals((await hook("stop", "Stop")).stdout, "");
        assertEquals((await runCli(["replay"], { env, clearEnv: true })).code, 0);
        const got = fake.messages(OV_SESSION).map((m) => `${m.turn_id}:${m.role}`);
        const want = [0, 1, 2, 3, 4, 5].flatMap((t) => [`${t}:user`, `${t}:assistant`]);
        assertEquals(got, want, `${pages} page(s) of room: each message once, in order`);
        assertEquals(tempsUnder(ov), [], `${pages} page(s) of room: no temp file left`);
      } finally {
        await new Deno.Command("umount", { args: [ov] }).output();
      }
    }
  },
});
