/**
 * The launcher's search for Deno when the one install recorded is gone (issue #15, point 2): `deno` on PATH,
 * then the usual places — `$DENO_INSTALL/bin`, `~/.deno/bin`, `~/.local/bin`, the fixed system places, and
 * nvm's Node versions (`$NVM_DIR`, else `~/.nvm`) — in that order, an executable file only. Each case runs
 * the real launcher script with a fake HOME / DENO_INSTALL / NVM_DIR holding a stand-in deno that records how
 * it ran; doctor's own search (findDeno) must name the same one.
 */

import { assertEquals, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { runProcess } from "../support/run.ts";
import { findDeno, launcherText } from "../../install/program.ts";
import { COPY_FILES } from "../../lib/self.ts";
import { VERSION } from "../../lib/version.ts";

const posix = Deno.build.os !== "windows";

/** A stand-in deno at `path`: it writes its own path, DENO_DIR and arguments to $OVK_RECORD, one a line. */
async function standIn(path: string, mode = 0o755): Promise<string> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, `#!/bin/sh\nprintf '%s\\n' "$0" "$DENO_DIR" "$@" > "$OVK_RECORD"\n`);
  await Deno.chmod(path, mode);
  return path;
}

/** A sandbox: a copy with its launcher (its recorded Deno gone), an empty HOME, a PATH with nothing on it. */
async function sandbox(root: string) {
  const copy = `${root}/versions/${VERSION}-0123456789ab`;
  await Deno.mkdir(`${copy}/bin`, { recursive: true });
  for (const f of [COPY_FILES.main, COPY_FILES.hook]) await Deno.writeTextFile(`${copy}/${f}`, "");
  const spec = {
    dir: copy,
    deno: `${root}/gone/deno`,
    flags: ["--allow-read", "--no-prompt"],
    version: VERSION,
    id: `${VERSION}-0123456789ab`,
    source: `${root}/checkout`,
  };
  const launcher = `${copy}/bin/openviking-kimi`;
  await Deno.writeTextFile(launcher, launcherText(spec), { mode: 0o755 });
  const home = `${root}/home`;
  const emptyPath = `${root}/empty-path`;
  await Deno.mkdir(home);
  await Deno.mkdir(emptyPath);
  const record = `${root}/record`;
  /** Runs `launcher <args>` (`hook stop`) with `extra` in the environment; what the Deno it ran recorded. */
  const run = async (extra: Record<string, string> = {}, args = ["hook", "stop"]) => {
    await Deno.remove(record).catch(() => {});
    const env = { HOME: home, PATH: emptyPath, OVK_RECORD: record, ...extra };
    // Run where a project's files could be: a relative base must never reach them.
    const r = await runProcess(launcher, args, { env, clearEnv: true, stdin: "{}", cwd: root });
    const ran = await Deno.readTextFile(record).then((t) => t.trimEnd().split("\n"), () => undefined);
    return { ...r, ran, found: await findDeno(spec.deno, env) };
  };
  return { root, copy, spec, home, run };
}

/** A Deno at a fixed system place (/usr/bin/deno, …): it comes before nvm's, so nvm's cannot be tested. */
const fixed = posix
  ? await findDeno("/nonexistent/deno", { HOME: "/nonexistent-home", PATH: "" })
  : undefined;

Deno.test({
  name: "the launcher finds a Deno in $DENO_INSTALL/bin, ~/.deno/bin, ~/.local/bin, in that order",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const s = await sandbox(dir.path);
    const runs = (deno: string) => [deno, `${s.copy}/${COPY_FILES.denoDir}`, "run"];

    const local = await standIn(`${s.home}/.local/bin/deno`);
    let r = await s.run();
    assertEquals(r.code, 0);
    assertEquals(r.ran?.slice(0, 3), runs(local));
    assertEquals(
      r.ran?.slice(-3),
      [`${s.copy}/${COPY_FILES.hook}`, "hook", "stop"],
      "the hook bundle, the args",
    );
    assertEquals(r.found, local, "doctor's search names the same Deno");

    const dotDeno = await standIn(`${s.home}/.deno/bin/deno`);
    r = await s.run();
    assertEquals([r.ran?.[0], r.found], [dotDeno, dotDeno]);

    const installed = await standIn(`${dir.path}/deno-install/bin/deno`);
    r = await s.run({ DENO_INSTALL: `${dir.path}/deno-install` });
    assertEquals([r.ran?.[0], r.found], [installed, installed]);
    // A relative base would name a file of whatever directory the hook runs in (a cloned project's).
    await standIn(`${dir.path}/relative/bin/deno`);
    await standIn(`${dir.path}/relative/versions/node/v1/bin/deno`);
    r = await s.run({ DENO_INSTALL: "relative" });
    assertEquals([r.ran?.[0], r.found], [dotDeno, dotDeno], "a relative DENO_INSTALL is not looked in");

    await Deno.chmod(dotDeno, 0o644);
    r = await s.run();
    assertEquals([r.ran?.[0], r.found], [local, local], "a file that is not executable is passed over");

    const onPath = await standIn(`${dir.path}/on-path/deno`);
    r = await s.run({ PATH: `${dir.path}/on-path`, DENO_INSTALL: `${dir.path}/deno-install` });
    assertEquals([r.ran?.[0], r.found], [onPath, onPath], "PATH comes before the usual places");

    const recorded = await standIn(s.spec.deno);
    r = await s.run({ PATH: `${dir.path}/on-path` });
    assertEquals([r.ran?.[0], r.found], [recorded, recorded], "the Deno install used comes first");
  },
});

Deno.test({
  name: "the launcher finds a Deno among nvm's Node versions, in $NVM_DIR or else ~/.nvm",
  // A Deno at a fixed place (/usr/bin/deno, …) is found first: nvm's could not be reached here.
  ignore: !posix || fixed !== undefined,
  async fn() {
    await using dir = await tempDir();
    const s = await sandbox(dir.path);
    let r = await s.run();
    assertEquals([r.code, r.ran, r.found], [0, undefined, undefined], "no Deno anywhere: the hook is silent");

    const inHome = await standIn(`${s.home}/.nvm/versions/node/v22.11.0/bin/deno`);
    r = await s.run();
    assertEquals(r.code, 0);
    assertEquals(r.ran?.slice(0, 3), [inHome, `${s.copy}/${COPY_FILES.denoDir}`, "run"]);
    assertEquals(r.found, inHome);

    const nvmDir = `${dir.path}/nvm`;
    const custom = await standIn(`${nvmDir}/versions/node/v20.18.1/bin/deno`);
    r = await s.run({ NVM_DIR: nvmDir });
    assertEquals([r.ran?.[0], r.found], [custom, custom], "$NVM_DIR, when set, instead of ~/.nvm");

    await Deno.mkdir(`${nvmDir}/versions/node/v18.20.4/bin`, { recursive: true }); // a Node without deno
    r = await s.run({ NVM_DIR: nvmDir });
    assertEquals([r.ran?.[0], r.found], [custom, custom], "a version without deno is passed over");
    assertTrue(r.ran!.includes(`${s.copy}/${COPY_FILES.hook}`));

    // Relative bases name files of whatever directory the hook runs in (a cloned project's): never looked in.
    await standIn(`${dir.path}/relative/versions/node/v1/bin/deno`);
    await standIn(`${dir.path}/relative-home/.nvm/versions/node/v1/bin/deno`);
    r = await s.run({ NVM_DIR: "relative" });
    assertEquals([r.ran?.[0], r.found], [inHome, inHome], "a relative NVM_DIR: ~/.nvm, as if unset");
    r = await s.run({ HOME: "relative-home" });
    assertEquals([r.code, r.ran, r.found], [0, undefined, undefined], "a relative HOME is not looked in");
  },
});

Deno.test({
  name:
    "without Deno, or with the copy's code gone, a hook is silent (exit 0) and every other command says why",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const s = await sandbox(dir.path);
    const checkout = s.spec.source;
    await Deno.mkdir(checkout);
    await Deno.writeTextFile(`${checkout}/deno.json`, "{}");
    let from = `\`cd ${checkout} && deno task -q install\` (the checkout this copy was built from)`;
    const says = async (why: string, extra: Record<string, string> = {}) => {
      for (const event of ["session-start", "user-prompt-submit", "stop"]) {
        const r = await s.run({ OPENVIKING_DEBUG: "1", ...extra }, ["hook", event]);
        assertEquals([r.code, r.stdout, r.stderr, r.ran], [0, "", "", undefined], event);
      }
      for (const args of [["mcp"], ["doctor"], ["doctor", "--json"], ["version"]]) {
        const r = await s.run(extra, args);
        assertEquals([r.code, r.stdout, r.ran], [1, "", undefined], args.join(" "));
        assertStringIncludes(r.stderr, `openviking-kimi: ${why}`);
        assertStringIncludes(r.stderr, from);
      }
    };
    // A Deno at a fixed place (/usr/bin/deno, …) cannot be hidden: then only the copy's code goes.
    if (fixed === undefined) {
      await says(`Deno not found at ${s.spec.deno} (the one install used), on PATH or in the usual places`);
    }
    const path = { PATH: `${dir.path}/on-path` };
    const onPath = await standIn(`${dir.path}/on-path/deno`);
    await Deno.remove(`${s.copy}/${COPY_FILES.hook}`);
    let r = await s.run(path);
    assertEquals([r.code, r.stdout, r.stderr, r.ran], [0, "", "", undefined], "hook.js alone gone: silent");
    r = await s.run(path, ["version"]);
    assertEquals(r.ran?.[0], onPath, "the full bundle still runs the rest");
    await Deno.remove(`${s.copy}/${COPY_FILES.main}`);
    await says(`the program copy ${s.copy} is gone or incomplete`, path);
    // The checkout it was built from gone too: said, and a command that works instead.
    await Deno.remove(checkout, { recursive: true });
    from = `the checkout this copy was built from, ${checkout}, is gone: run \`deno task -q install\` in a ` +
      "clone of openviking-kimi, or install a release binary, which needs no Deno";
    await says(`the program copy ${s.copy} is gone or incomplete`, path);
  },
});
