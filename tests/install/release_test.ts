/** Release pieces: targets, compile flags, the compile failure message here, the workflow, the repo's plugin. */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { cliArgs, denoDir, ROOT } from "../support/run.ts";
import { artifactName, compileArgs, compileFlags, explainFailure, TARGETS } from "../../scripts/compile.ts";
import { productionFlags } from "../../lib/self.ts";
import { manifestText } from "../../install/spec.ts";
import { VERSION } from "../../lib/version.ts";
import { cloneCheckout, isolatedEnv } from "./helpers.ts";

const posix = Deno.build.os !== "windows";

Deno.test("compile targets are exactly the ones this Deno accepts", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["compile", "--target", "not-a-target", `${ROOT}/main.ts`],
    stdout: "null",
    stderr: "piped",
  }).output();
  // deno-lint-ignore no-control-regex
  const text = new TextDecoder().decode(out.stderr).replace(/\u001b\[[0-9;]*m/g, "");
  const m = /possible values: ([^\n]+)/.exec(text);
  assertTrue(m, text);
  assertEquals([...TARGETS].sort(), m![1].split(",").map((s) => s.trim()).sort());
});

Deno.test("the compiled binary gets the cli task's permission flags and nothing else", async () => {
  const flags = await compileFlags(ROOT);
  assertEquals(flags, (await productionFlags(ROOT)).filter((f) => f !== "--quiet"));
  const args = compileArgs(flags, "x86_64-pc-windows-msvc", "/o/x.exe", ROOT);
  assertEquals(args.filter((a) => a.startsWith("--allow") || a === "--no-prompt"), flags);
  assertEquals(artifactName("x86_64-pc-windows-msvc"), "openviking-kimi-x86_64-pc-windows-msvc.exe");
  assertEquals(artifactName("aarch64-apple-darwin"), "openviking-kimi-aarch64-apple-darwin");
});

Deno.test("deno task compile builds, or fails with a clear message where dl.deno.land is unreachable", async () => {
  await using dir = await tempDir();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "task",
      "--quiet",
      "--config",
      `${ROOT}/deno.json`,
      "compile",
      "--target",
      "x86_64-unknown-linux-gnu",
      "--out",
      dir.path,
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(300_000),
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  if (out.code === 0) {
    const exe = `${dir.path}/openviking-kimi-x86_64-unknown-linux-gnu`;
    assertEquals(
      JSON.parse(await Deno.readTextFile(`${dir.path}/plugin/x86_64-unknown-linux-gnu/kimi.plugin.json`))
        .name,
      "openviking-memory",
    );
    if (Deno.build.os === "linux" && Deno.build.arch === "x86_64") {
      const v = await new Deno.Command(exe, { args: ["version"], stdout: "piped" }).output();
      assertEquals(new TextDecoder().decode(v.stdout).trim(), VERSION);
    }
  } else {
    assertEquals(out.code, 1, stderr);
    assertMatch(stderr, /could not get its base runtime \(denort\).*dl\.deno\.land/);
    assertMatch(stderr, /DENORT_BIN/);
    assertStringIncludes(stderr, "permission flags (from deno.json's cli task): --allow-read");
  }
});

Deno.test("explainFailure names dl.deno.land and the way out", () => {
  const msg = explainFailure(
    "aarch64-apple-darwin",
    "error: Writing deno compile executable\n\nCaused by:\n    0: Setting up base binary.\n    1: error sending request for url (https://dl.deno.land/release/v2.9.6/denort-aarch64-apple-darwin.zip)",
  );
  assertMatch(msg, /dl\.deno\.land.*DENORT_BIN/s);
  assertMatch(explainFailure("x", "error: Module not found"), /^deno compile failed for x/);
});

Deno.test("the repository's kimi.plugin.json is the generated manifest, at this version", async () => {
  const text = await Deno.readTextFile(`${ROOT}/kimi.plugin.json`);
  assertEquals(text, manifestText("posix"), "regenerate with install/spec.ts manifestText('posix')");
  const deno = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)) as { version: string };
  assertEquals([JSON.parse(text).version, deno.version], [VERSION, VERSION]);
  for (const h of JSON.parse(text).hooks) assertEquals(Object.keys(h).includes("env"), false);
});

Deno.test("the repository's manifest names its system prompt (≤ 32 KB), skill and commands", async () => {
  const manifest = JSON.parse(await Deno.readTextFile(`${ROOT}/kimi.plugin.json`));
  assertEquals(
    [manifest.systemPromptPath, manifest.skills, manifest.commands],
    ["./system-prompt.md", "./skills", "./commands"],
  );
  const size = new TextEncoder().encode(await Deno.readTextFile(`${ROOT}/system-prompt.md`)).length;
  assertTrue(size <= 32 * 1024, `${size} bytes: Kimi ignores a system prompt over 32 KB`);
});

Deno.test({
  name: "bin/openviking-kimi runs the cli task from a copy of the tree (what /plugins install makes)",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const info = await Deno.stat(`${ROOT}/bin/openviking-kimi`);
    assertTrue((info.mode! & 0o111) !== 0, "the launcher is executable");
    await cloneCheckout(`${dir.path}/copy`);
    await Deno.chmod(`${dir.path}/copy/bin/openviking-kimi`, 0o755);
    const env = await isolatedEnv(`${dir.path}/home`);
    const v = await new Deno.Command(`${dir.path}/copy/bin/openviking-kimi`, {
      args: ["version"],
      cwd: `${dir.path}/copy`,
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(new TextDecoder().decode(v.stdout).trim(), VERSION, new TextDecoder().decode(v.stderr));
    // Without Deno anywhere it says what is missing and exits 127 (never 2, which Kimi reads as "block").
    const none = await new Deno.Command("/bin/sh", {
      args: [`${dir.path}/copy/bin/openviking-kimi`, "version"],
      env: { PATH: "/nonexistent", HOME: `${dir.path}/home` },
      clearEnv: true,
      stderr: "piped",
    }).output();
    assertEquals(none.code, 127);
    assertMatch(new TextDecoder().decode(none.stderr), /needs Deno 2/);
  },
});

Deno.test("the release workflow: on a tag, one job per target compiles, smoke-tests, uploads; then sums and attaches binaries and plugin zips", async () => {
  const yml = await Deno.readTextFile(`${ROOT}/.github/workflows/release.yml`);
  for (
    const needle of [
      "tags:",
      "sha256sum",
      "SHA256SUMS",
      "gh release create",
      "-plugin.zip",
      "kimi.plugin.json bin system-prompt.md skills commands",
    ]
  ) {
    assertStringIncludes(yml, needle);
  }
  const build = yml.slice(yml.indexOf("\n  build:"), yml.indexOf("\n  release:"));
  const targets = [...build.matchAll(/target: ([a-z0-9_-]+), runner: ([a-z0-9.-]+)/g)].map((m) => m[1]);
  assertEquals(targets.sort(), [...TARGETS].sort(), "one job per compile target");
  const compile = build.indexOf("deno task compile --target ${{ matrix.target }}");
  const smoke = build.indexOf(
    'scripts/smoke.ts "dist/openviking-kimi-${{ matrix.target }}${{ matrix.exe }}"',
  );
  const upload = build.indexOf("actions/upload-artifact");
  assertTrue(compile > 0 && smoke > compile && upload > smoke, "compile, then smoke, then upload");
  const release = yml.slice(yml.indexOf("\n  release:"));
  assertMatch(release, /needs: build/);
  assertTrue(release.indexOf("sha256sum") < release.indexOf("gh release create"), "sums before publishing");
});

/** A stand-in for the compiled binary: this checkout run with the production flags, as one executable. */
async function standIn(dir: string, body: (cli: string) => string): Promise<string> {
  const cli = [Deno.execPath(), ...(await cliArgs())].map((w) => `'${w}'`).join(" ");
  const path = `${dir}/openviking-kimi-stand-in`;
  await Deno.writeTextFile(path, `#!/bin/sh\nexport DENO_DIR='${denoDir()}'\n${body(cli)}\n`, {
    mode: 0o755,
  });
  return path;
}

async function runSmoke(exe: string): Promise<{ code: number; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...await productionFlags(ROOT),
      "--config",
      `${ROOT}/tests/deno.json`,
      `${ROOT}/scripts/smoke.ts`,
      exe,
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test({
  name: "the smoke test passes a working executable and names the step a broken one fails",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const good = await runSmoke(await standIn(dir.path, (cli) => `exec ${cli} "$@"`));
    assertEquals(good.code, 0, good.stderr);
    for (const step of ["version", "doctor --json on an empty home", "prompt hook", "Stop hook"]) {
      assertStringIncludes(good.stderr, `✓ ${step}`);
    }
    // A binary whose Stop captures nothing (its worker never starts) fails at that step, exit 1.
    const noWorker = await runSmoke(
      await standIn(dir.path, (cli) => `[ "$2" = stop ] && { cat >/dev/null; exit 0; }\nexec ${cli} "$@"`),
    );
    assertEquals(noWorker.code, 1, noWorker.stderr);
    assertMatch(noWorker.stderr, /FAILED Stop hook .*the turn stored/);
    const wrongVersion = await runSmoke(await standIn(dir.path, () => "echo 0.0.0"));
    assertEquals(wrongVersion.code, 1);
    assertMatch(wrongVersion.stderr, /FAILED version: expected exit 0 and /);
  },
});
