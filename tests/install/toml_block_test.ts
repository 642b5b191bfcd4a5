import { deepEqual } from "../../lib/parsed.ts";
import fc from "fast-check";
import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { CREATED_LINE, findBlocks, parseToml, removeBlocks, renderBlock } from "../../install/toml-block.ts";
import {
  invalidHookKeys,
  planConfigInstall,
  planConfigUninstall,
  SETTINGS_AFTER_BLOCK,
  withoutHooks,
} from "../../install/toml-block.ts";
import { BLOCK_BEGIN, BLOCK_END, hookEntries } from "../../install/spec.ts";
import { HOOKS } from "../../kimi/hooks.ts";
import { tomlDocument, trailingSection } from "./toml_arbitrary.ts";
import { ok } from "./helpers.ts";

const ENTRIES = hookEntries("'/opt/open viking/bin/openviking-kimi'");
const OTHER_ENTRIES = hookEntries("/usr/local/bin/openviking-kimi");

const install = (text: string | undefined, entries = ENTRIES) => ok(planConfigInstall(text, entries)).after!;
const uninstall = (text: string) => ok(planConfigUninstall(text)).after;
const parsed = (text: string) => ok(parseToml(text)).value;

const valid = (doc: string) => parseToml(doc).ok;
const RUNS = { numRuns: 300 };

Deno.test("property: install → uninstall gives back the bytes; install is idempotent (over an older block too), keeps every user key's value and the file's line endings, and adds exactly our hooks", () => {
  fc.assert(
    fc.property(tomlDocument(), (doc) => {
      fc.pre(valid(doc));
      const once = install(doc);
      assertEquals(uninstall(once), doc);
      assertEquals(install(once), once);
      assertEquals(install(install(doc, OTHER_ENTRIES)), once);
      const after = parsed(once);
      assertTrue(deepEqual(withoutHooks(after, ENTRIES as unknown as unknown[]), parsed(doc)));
      const hooks = (after.hooks as Record<string, unknown>[]).filter((h) =>
        ENTRIES.some((e) => deepEqual(e, h))
      );
      assertEquals(hooks.length, HOOKS.length);
      assertTrue(once.startsWith(doc));
      assertEquals(once.endsWith("\n"), doc.endsWith("\n") || doc === "");
      if (!doc.includes("\n")) return;
      const added = once.slice(doc.length);
      if (doc[doc.indexOf("\n") - 1] === "\r") assertEquals(added.replace(/\r\n/g, "").includes("\n"), false);
      else assertEquals(added.includes("\r"), false);
    }),
    RUNS,
  );
});

Deno.test("property: a table the user adds after our block keeps its meaning through re-install and uninstall", () => {
  fc.assert(
    fc.property(tomlDocument(), trailingSection(), (doc, extra) => {
      fc.pre(valid(doc));
      const installed = install(doc);
      const eol = installed.endsWith("\n") ? "" : "\n";
      const edited = installed + eol + extra;
      fc.pre(valid(edited));
      assertEquals(install(edited), edited);
      const removed = uninstall(edited)!;
      const expected = doc + (doc === "" || doc.endsWith("\n") ? "" : "\n") + extra;
      assertTrue(deepEqual(parsed(removed), parsed(expected)), `${JSON.stringify(removed)}`);
    }),
    { numRuns: 150 },
  );
});

Deno.test("property: keys written after our block are never silently moved: install and uninstall refuse", () => {
  fc.assert(
    fc.property(tomlDocument(), fc.constantFrom("\n", "\r\n"), (doc, eol) => {
      fc.pre(valid(doc));
      const installed = install(doc);
      const edited = installed + (installed.endsWith("\n") ? "" : eol) + `model = "captured"${eol}`;
      fc.pre(valid(edited));
      const again = planConfigInstall(edited, ENTRIES);
      assertEquals(again.ok, false);
      if (!again.ok) {
        assertMatch(again.error, /change the meaning|does not parse without the openviking block/);
      }
      const removed = planConfigUninstall(edited);
      assertEquals(removed.ok, false);
    }),
    { numRuns: 100 },
  );
});

Deno.test("install into a missing file creates it; uninstall deletes it again", () => {
  const created = install(undefined);
  assertTrue(created.includes(CREATED_LINE));
  assertEquals(uninstall(created), undefined);
  // An empty file that exists stays an (empty) file.
  assertEquals(uninstall(install("")), "");
  // Re-install keeps the "created" note.
  assertEquals(install(created, OTHER_ENTRIES).includes(CREATED_LINE), true);
});

Deno.test("what install refuses, and why: no parse, hooks not [[hooks]], unbalanced markers, our hooks outside", () => {
  const cases: [string, RegExp, boolean?][] = [
    ["a = [1,\n", /does not parse.*nothing was changed/s, true],
    ['hooks = "x"\n', /"hooks" must be an array of tables/],
    ["[hooks]\nevent = 1\n", /"hooks" must be an array of tables/],
    ["hooks = []\n", /"hooks" must be an array of tables/],
    ["hooks.a = 1\n", /"hooks" must be an array of tables/],
    [`${BLOCK_BEGIN}\n[[hooks]]\n`, /never closed/, true],
    [`${BLOCK_END}\n`, /without a matching begin line/, true],
    [`${BLOCK_BEGIN}\n${BLOCK_BEGIN}\n${BLOCK_END}\n`, /a second/, true],
    ['[[hooks]]\nevent = "Stop"\ncommand = "/x/openviking-kimi hook stop"\n', /outside the marked block/],
  ];
  for (const [doc, why, uninstallToo] of cases) {
    const plan = planConfigInstall(doc, ENTRIES);
    assertTrue(!plan.ok && why.test(plan.error), `${doc}: ${JSON.stringify(plan)}`);
    if (uninstallToo) assertEquals(planConfigUninstall(doc).ok, false, doc);
  }
});

Deno.test("a user sub-table of their last [[hooks]] entry is not re-attached to ours", () => {
  // Our block is appended at the end, so `[hooks.sub]` still belongs to the user's hook.
  const doc = '[[hooks]]\nevent = "Stop"\ncommand = "x"\n[hooks.sub]\nk = 1\n';
  assertEquals(uninstall(install(doc)), doc);
});

Deno.test("two blocks collapse into one on re-install", () => {
  const block = renderBlock(OTHER_ENTRIES, "\n");
  const doc = `a = 1\n${block}\n[t]\nb = 2\n${block}\n`;
  const after = install(doc);
  const found = findBlocks(after);
  assertTrue("blocks" in found && found.blocks.length === 1);
  assertEquals(removeBlocks(after), "a = 1\n[t]\nb = 2\n");
});

Deno.test("OpenViking's own block (same markers) is replaced by install (runInstall asks first: install_test) and left by uninstall", () => {
  const upstream = [
    BLOCK_BEGIN,
    "[[hooks]]",
    'event = "Stop"',
    "command = \"node '/home/u/.openviking/agent-integrations/kimicode/scripts/kimicode-hook.mjs' stop\"",
    "timeout = 30",
    BLOCK_END,
    "",
  ].join("\n");
  const replaced = install(upstream);
  assertTrue(!replaced.includes("kimicode-hook.mjs") && replaced.includes(ENTRIES[0].command), replaced);
  const left = ok(planConfigUninstall(upstream));
  assertTrue(!left.changed && left.warnings.length === 1);
});

Deno.test("a user hook with a fifth key is reported (Kimi would drop every hook)", () => {
  const plan = ok(planConfigInstall('[[hooks]]\nevent = "Stop"\ncommand = "x"\ncwd = "/tmp"\n', ENTRIES));
  assertMatch(plan.warnings.join(), /"cwd".*ignores every \[\[hooks\]\]/);
});

Deno.test("our block writes only the four keys Kimi allows, and escapes commands", () => {
  const block = renderBlock(hookEntries(`'C:\\Program Files\\ov "x"\\openviking-kimi.exe'`), "\n");
  const value = parsed(block);
  for (const h of value.hooks as Record<string, unknown>[]) {
    for (const k of Object.keys(h)) assertTrue(["event", "matcher", "command", "timeout"].includes(k));
  }
  assertEquals(
    (value.hooks as Record<string, unknown>[])[0].command,
    `'C:\\Program Files\\ov "x"\\openviking-kimi.exe' hook session-start`,
  );
});

Deno.test("settings written after our block: doctor and install give the same advice — move them above, never remove them", () => {
  const doc = `model = "k2"\n${renderBlock(ENTRIES, "\n")}\ndefault_thinking = true\n`;
  const doctorSays = invalidHookKeys(parsed(doc));
  assertEquals(doctorSays.length, 1);
  assertMatch(doctorSays[0], /"default_thinking"/);
  assertTrue(!/remove/.test(doctorSays[0]), doctorSays[0]);
  assertStringIncludes(doctorSays[0], SETTINGS_AFTER_BLOCK);
  for (const plan of [planConfigInstall(doc, OTHER_ENTRIES), planConfigUninstall(doc)]) {
    assertTrue(!plan.ok && plan.error.includes(SETTINGS_AFTER_BLOCK), JSON.stringify(plan));
  }
  // A key of the user's own [[hooks]] table is still theirs to remove.
  const own = parsed('[[hooks]]\nevent = "Stop"\ncommand = "x"\ncwd = "/tmp"\n');
  assertMatch(invalidHookKeys(own).join(), /remove that key/);
});
