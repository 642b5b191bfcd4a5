/**
 * The documentation stays true to the code: every knob in README, CI runs README's test command, README's
 * command list is the generated top-level help.
 */

import { assertTrue } from "./support/assert.ts";
import { KNOBS } from "../runtime/knobs.ts";
import { VERSION } from "../runtime/version.ts";
import { helpText } from "../cli/commands.ts";

const root = new URL("../", import.meta.url);
const readme = await Deno.readTextFile(new URL("README.md", root));

Deno.test("README documents every knob's environment variable", () => {
  for (const knob of Object.values(KNOBS)) {
    assertTrue(readme.includes(`\`${knob.env}\``), `${knob.env} missing from README`);
  }
});

Deno.test("CI runs README's test command word for word; deno.json and the code agree on the version", async () => {
  const quick = readme.slice(readme.indexOf("## Quick start"), readme.indexOf("### From a release"));
  const test = /^(deno task test)\b/m.exec(quick.replace(/^```sh\n/m, ""))?.[1];
  assertTrue(test === "deno task test", "README's quick start names the test command");
  const ci = await Deno.readTextFile(new URL(".ci/run", root));
  assertTrue(ci.split("\n").some((l) => l.trim() === test), ".ci/run runs it");
  const deno = JSON.parse(await Deno.readTextFile(new URL("deno.json", root)));
  assertTrue(deno.version === VERSION, `deno.json ${deno.version} vs runtime/version.ts ${VERSION}`);
});

Deno.test("README's command list is exactly `openviking-kimi help`", () => {
  const section = readme.slice(readme.indexOf("## Commands\n"));
  const block = /^```\n([\s\S]*?)^```$/m.exec(section)?.[1];
  assertTrue(block !== undefined, "README has a fenced block under ## Commands");
  assertTrue(
    block === `${helpText()}\n`,
    "README's ## Commands block differs from the help: paste the output of `deno task cli help` there",
  );
});
