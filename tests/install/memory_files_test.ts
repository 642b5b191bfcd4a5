/**
 * Install and uninstall of memory's files: the plugin's manifest points at a system prompt (0600, ours, filled
 * with the profile right after install when OpenViking answers), the memory skill and the three commands.
 * Uninstall takes out exactly these — the profile with the system prompt — and nothing of the user's.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { installSandbox, read } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { PLUGIN_TEXTS, SYSTEM_PROMPT_TITLE } from "../../memory/system-prompt.ts";

const posix = Deno.build.os !== "windows";

/** Nothing answers at the address (port 9), and install does not wait long for it. */
const NO_SERVER = { OPENVIKING_URL: "http://127.0.0.1:9", OPENVIKING_TIMEOUT_MS: "1000" };

const mode = async (path: string) => (await Deno.stat(path)).mode! & 0o777;

Deno.test("plugin mode: the manifest points at the system prompt, the skill and the commands, all placed and private (an install fixes one placed 0644)", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, NO_SERVER);
  await t.run(runInstall);
  const manifest = JSON.parse((await read(`${t.plugin}/kimi.plugin.json`))!);
  assertEquals(
    [manifest.systemPromptPath, manifest.skills, manifest.commands],
    ["./system-prompt.md", "./skills", "./commands"],
  );
  const prompt = (await read(`${t.plugin}/system-prompt.md`))!;
  assertTrue(prompt.startsWith(SYSTEM_PROMPT_TITLE), prompt);
  assertStringIncludes(prompt, "`mcp__plugin-openviking-memory_openviking__read`");
  if (posix) assertEquals(await mode(`${t.plugin}/system-prompt.md`), 0o600, "it will hold the profile");
  const repo = (path: string) => Deno.readTextFile(new URL(`../../${path}`, import.meta.url));
  for (const [path] of PLUGIN_TEXTS.filter(([p]) => p !== "system-prompt.md")) {
    assertEquals(await read(`${t.plugin}/${path}`), await repo(path), path);
  }
  for (const name of ["remember", "forget", "recall"]) {
    const text = (await read(`${t.plugin}/commands/${name}.md`))!;
    assertMatch(text, new RegExp(`^---\\nname: ${name}\\ndescription: .+\\n---\\n[^]*\\$ARGUMENTS\\n$`));
    assertStringIncludes(
      text,
      `mcp__plugin-openviking-memory_openviking__${name === "recall" ? "search" : name}`,
    );
  }
  // OpenViking did not answer (nothing listens on port 9): install says so and the hooks fill it in later.
  assertMatch(
    t.all(),
    /the plugin's system prompt has no profile yet \(OpenViking did not answer\)/,
  );
  assertStringIncludes(prompt, "Not loaded yet");
  if (!posix) return;
  const modes = async (d = t.plugin, out: Record<string, number> = {}) => {
    for await (const e of Deno.readDir(d)) {
      if (e.isDirectory) await modes(`${d}/${e.name}`, out);
      else out[`${d}/${e.name}`.slice(t.plugin.length + 1)] = await mode(`${d}/${e.name}`);
    }
    return out;
  };
  assertEquals(await mode(t.plugin), 0o700);
  for (const [path, m] of Object.entries(await modes())) {
    assertEquals(m, path.startsWith("bin/") ? 0o700 : 0o600, `${path} is ${m.toString(8)}`);
  }
  await Deno.chmod(`${t.plugin}/kimi.plugin.json`, 0o644);
  await t.run(runInstall);
  assertEquals((await modes())["kimi.plugin.json"], 0o600);
});

Deno.test("plugin mode: with OpenViking answering, install fills the system prompt with the (redacted) profile; uninstall removes it, keeps the rest unless --purge", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  fake.files.set(
    "viking://user/default/memories/profile.md",
    "# Profile\nName: Test User\nToken: sk-live-0123456789abcdef0123456789abcdef\n<private>diary</private>",
  );
  const t = await installSandbox(dir.path, { OPENVIKING_URL: fake.url, OPENVIKING_TIMEOUT_MS: "1000" });
  await t.run(runInstall);
  const prompt = (await read(`${t.plugin}/system-prompt.md`))!;
  assertStringIncludes(prompt, "## The user's profile\n\nFrom OpenViking, 2026-11-30 12:00 UTC:");
  assertStringIncludes(prompt, "Name: Test User");
  assertStringIncludes(prompt, "indent.md — Tabs over spaces");
  assertTrue(!prompt.includes("sk-live-0123") && !prompt.includes("diary"), prompt);
  assertMatch(t.all(), /✓ the user's profile is in the plugin's system prompt/);
  if (posix) assertEquals(await mode(`${t.plugin}/system-prompt.md`), 0o600);
  await t.run(runUninstall);
  assertEquals(await read(`${t.plugin}/system-prompt.md`), undefined);
  assertTrue(await read(`${t.plugin}/skills/openviking-memory/SKILL.md`) !== undefined);
  await t.run(runInstall);
  await t.run(runUninstall, { purge: true });
  assertEquals(await read(`${t.plugin}/kimi.plugin.json`), undefined);
});

Deno.test("a skill of the user's where an older install put ours keeps its place and its bytes; their other skills stay", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, NO_SERVER);
  await Deno.mkdir(`${t.kimi}/skills/openviking-memory`, { recursive: true });
  await Deno.mkdir(`${t.kimi}/skills/mine`, { recursive: true });
  const theirs = "---\nname: openviking-memory\ndescription: my own\n---\nmine\n";
  await Deno.writeTextFile(`${t.kimi}/skills/openviking-memory/SKILL.md`, theirs);
  await Deno.writeTextFile(`${t.kimi}/skills/mine/SKILL.md`, "---\nname: mine\n---\n");
  await t.run(runInstall);
  assertEquals(await read(`${t.kimi}/skills/openviking-memory/SKILL.md`), theirs);
  await t.run(runUninstall);
  assertEquals(await read(`${t.kimi}/skills/openviking-memory/SKILL.md`), theirs);
  assertEquals(await read(`${t.kimi}/skills/mine/SKILL.md`), "---\nname: mine\n---\n");
});
