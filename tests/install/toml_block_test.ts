import { deepEqual } from "../../lib/parsed.ts";
import fc from "fast-check";
import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { findBlocks, invalidHookKeys, parseToml, planConfigUninstall } from "../../install/toml-block.ts";
import { BLOCK_BEGIN, BLOCK_END } from "../../install/spec.ts";
import { tomlDocument, trailingSection } from "./toml_arbitrary.ts";
import { olderConfigBlock, withOlderBlock } from "./config_mode_home.ts";
import { ok } from "./helpers.ts";

const uninstall = (text: string) => ok(planConfigUninstall(text)).after;
const parsed = (text: string) => ok(parseToml(text)).value;
const valid = (doc: string) => parseToml(doc).ok;

Deno.test("property: uninstall takes an older install's block out byte for byte, line endings kept", () => {
  fc.assert(
    fc.property(tomlDocument(), (doc) => {
      fc.pre(valid(doc));
      assertEquals(uninstall(withOlderBlock(doc)), doc);
    }),
    { numRuns: 300 },
  );
});

Deno.test("property: a table the user added after our block keeps its meaning through uninstall", () => {
  fc.assert(
    fc.property(tomlDocument(), trailingSection(), (doc, extra) => {
      fc.pre(valid(doc));
      const installed = withOlderBlock(doc);
      const edited = installed + (installed.endsWith("\n") ? "" : "\n") + extra;
      fc.pre(valid(edited));
      const expected = doc + (doc === "" || doc.endsWith("\n") ? "" : "\n") + extra;
      assertTrue(deepEqual(parsed(uninstall(edited)!), parsed(expected)));
    }),
    { numRuns: 150 },
  );
});

Deno.test("keys written after our block are never silently moved: uninstall refuses naming its lines, doctor says move them", () => {
  const doc = `model = "k2"\n${olderConfigBlock("/x/openviking-kimi")}\ndefault_thinking = true\n`;
  const doctorSays = invalidHookKeys(parsed(doc));
  assertEquals(doctorSays.length, 1);
  assertMatch(doctorSays[0], /"default_thinking".*move it above/);
  const plan = planConfigUninstall(doc);
  const last = doc.split("\n").indexOf(BLOCK_END) + 1;
  assertTrue(!plan.ok && plan.error.includes(`lines 2–${last}`) && /Move them above/.test(plan.error));
});

Deno.test("a file the older install created goes with its block; an empty one that was there stays", () => {
  assertEquals(uninstall(withOlderBlock(undefined)), undefined);
  assertEquals(uninstall(withOlderBlock("")), "");
});

Deno.test("what uninstall refuses: no parse, unbalanced markers", () => {
  for (
    const [doc, why] of [
      ["a = [1,\n", /does not parse.*nothing was changed/s],
      [`${BLOCK_BEGIN}\n[[hooks]]\n`, /never closed/],
      [`${BLOCK_END}\n`, /without a matching begin line/],
      [`${BLOCK_BEGIN}\n${BLOCK_BEGIN}\n${BLOCK_END}\n`, /a second/],
    ] as const
  ) {
    const plan = planConfigUninstall(doc);
    assertTrue(!plan.ok && why.test(plan.error), `${doc}: ${JSON.stringify(plan)}`);
  }
});

Deno.test("a user sub-table of their last [[hooks]] entry stays theirs", () => {
  const doc = '[[hooks]]\nevent = "Stop"\ncommand = "x"\n[hooks.sub]\nk = 1\n';
  assertEquals(uninstall(withOlderBlock(doc)), doc);
});

Deno.test("two blocks both come out", () => {
  const block = olderConfigBlock("/usr/local/bin/openviking-kimi");
  const doc = `a = 1\n${block}\n[t]\nb = 2\n${block}\n`;
  assertEquals(ok(findBlocks(doc)).blocks.length, 2);
  assertEquals(uninstall(doc), "a = 1\n[t]\nb = 2\n");
});

Deno.test("OpenViking's own block (same markers) is left by uninstall, with a note", () => {
  const upstream = [
    BLOCK_BEGIN,
    "[[hooks]]",
    'event = "Stop"',
    "command = \"node '/home/u/.openviking/agent-integrations/kimicode/scripts/kimicode-hook.mjs' stop\"",
    "timeout = 30",
    BLOCK_END,
    "",
  ].join("\n");
  const left = ok(planConfigUninstall(upstream));
  assertTrue(!left.changed && left.warnings.length === 1);
});
