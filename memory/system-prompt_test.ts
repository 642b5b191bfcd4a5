/**
 * The plugin's system prompt file, refreshed in-process: at most every 10 minutes unless forced; a missing file
 * or one that is not ours is never written; an unanswered server leaves the profile it has; Kimi's 32 KB hold
 * whatever the profile holds; with recall off it carries no profile.
 */

import { assertEquals, assertStringIncludes, assertTrue } from "../tests/support/assert.ts";
import { FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { sandboxEnv } from "../tests/support/hook-context.ts";
import { tempDir } from "../tests/support/temp.ts";
import { loadConfig } from "../openviking/config.ts";
import { refreshPromptFile } from "./system-prompt.ts";

/** A sandbox with a plugin root holding a fresh (install-time) system prompt. */
async function plugin(dir: string, url: string) {
  const root = `${dir}/.kimi-code/plugins/managed/openviking-memory`;
  await Deno.mkdir(root, { recursive: true });
  const file = `${root}/system-prompt.md`;
  const initial = await Deno.readTextFile(new URL("../system-prompt.md", import.meta.url));
  await Deno.writeTextFile(file, initial, { mode: 0o600 });
  return { file, initial, env: sandboxEnv(dir, url, { KIMI_PLUGIN_ROOT: root }) };
}

Deno.test("refresh: a commit refreshes at most every 10 minutes; a missing or foreign file is never written; an outage keeps the profile", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const p = await plugin(dir.path, fake.url);
  const { config } = await loadConfig(p.env);
  const now = new Date();
  assertEquals(await refreshPromptFile(p.file, config, { force: false, now }), "fresh", "just installed");
  assertEquals(await Deno.readTextFile(p.file), p.initial);
  const later = new Date(now.getTime() + 11 * 60_000);
  assertEquals(await refreshPromptFile(p.file, config, { force: false, now: later }), "written");
  const withProfile = await Deno.readTextFile(p.file);
  assertStringIncludes(withProfile, "Name: Test User");

  fake.fault({ route: "*", status: 503 });
  assertEquals(await refreshPromptFile(p.file, config, { force: true }), "unreachable");
  assertEquals(await Deno.readTextFile(p.file), withProfile, "the profile it had is kept");
  fake.faults = [];

  await Deno.remove(p.file);
  assertEquals(await refreshPromptFile(p.file, config, { force: true }), "missing");
  assertEquals(await Deno.stat(p.file).catch(() => "gone"), "gone", "uninstall removed it: stays removed");
  await Deno.writeTextFile(p.file, "# Another plugin's prompt\n");
  assertEquals(await refreshPromptFile(p.file, config, { force: true }), "not-ours");
  assertEquals(await Deno.readTextFile(p.file), "# Another plugin's prompt\n");
  await Deno.remove(p.file);
  await Deno.symlink("/etc/hostname", p.file);
  assertEquals(
    await refreshPromptFile(p.file, config, { force: true }),
    "not-ours",
    "a link is not followed",
  );
});

Deno.test("refresh: the file stays within Kimi's 32 KB whatever the profile holds", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const p = await plugin(dir.path, fake.url);
  // A "€" weighs a quarter token but 3 bytes: within the token budget, past 32 KB.
  fake.files.set("viking://user/default/memories/profile.md", "喜欢制表符 €€€€€€€€€€€€\n".repeat(8_000));
  const leaf = (i: number) => ({
    name: `p${i}.md`,
    rel_path: `p${i}.md`,
    isDir: false,
    abstract: "€ ".repeat(100),
  });
  fake.dirs.set("viking://user/default/memories/preferences", Array.from({ length: 500 }, (_, i) => leaf(i)));
  const { config } = await loadConfig(p.env);
  assertEquals(await refreshPromptFile(p.file, config, { force: true }), "written");
  const bytes = (await Deno.readFile(p.file)).length;
  assertTrue(bytes <= 32 * 1024, `${bytes} bytes`);
  assertTrue((await Deno.readTextFile(p.file)).isWellFormed());
});

Deno.test("refresh: with recall switched off the system prompt carries no profile, and says why", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const p = await plugin(dir.path, fake.url);
  const { config } = await loadConfig({ ...p.env, OPENVIKING_AUTO_RECALL: "0" });
  assertEquals(await refreshPromptFile(p.file, config, { force: true }), "written");
  const text = await Deno.readTextFile(p.file);
  assertStringIncludes(text, "recall is switched off");
  assertTrue(!text.includes("Name: Test User"));
  assertEquals(fake.requests.length, 0, "nothing asked");
});

Deno.test("system-prompt.md: the repo's file holds the profile heading the refresh splits at, once", async () => {
  const text = await Deno.readTextFile(new URL("../system-prompt.md", import.meta.url));
  assertEquals(text.split("\n\n## The user's profile\n\n").length, 2, "the instructions end at this heading");
});
