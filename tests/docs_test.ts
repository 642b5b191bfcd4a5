/**
 * The documentation stays true to the code: every knob in README, CI runs README's test command, README's
 * command list is the generated top-level help.
 */

import { assertTrue } from "./support/assert.ts";
import { KNOBS } from "../runtime/knobs.ts";
import { VERSION } from "../runtime/version.ts";
import { helpText } from "../cli/commands.ts";
import { buildOvConf } from "./support/real-openviking.ts";

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

Deno.test("README's commands forward arguments through `deno task -q` (deno task echoes them otherwise)", () => {
  const loud = [...readme.matchAll(/deno task (install|uninstall|cli)\b[^\n`]*/g)].map((m) => m[0]);
  assertTrue(loud.length === 0, `without -q: ${loud.join(" | ")}`);
  const quick = readme.slice(readme.indexOf("## Quick start"), readme.indexOf("### No server yet?"));
  const commands = /```sh\n([\s\S]*?)```/.exec(quick)![1].split("\n").filter((l) => l && !l.startsWith("#"));
  assertTrue(
    JSON.stringify(commands) ===
      JSON.stringify(["npm install -g deno@2.9.6 && deno task -q install", "deno task test"]),
    `the quick start is two commands, one installing, one testing: ${JSON.stringify(commands)}`,
  );
});

Deno.test("README's ov.conf for a local server has the shape the real-server tests run OpenViking with", () => {
  const section = readme.slice(readme.indexOf("### No server yet?"));
  const text = /cat > ~\/\.openviking\/ov\.conf <<'EOF'\n([\s\S]*?)\nEOF\n/.exec(section)?.[1];
  assertTrue(text !== undefined, "README has the ov.conf heredoc");
  const conf = JSON.parse(text!);
  const paths = (o: unknown, at = ""): string[] =>
    o && typeof o === "object" && !Array.isArray(o)
      ? Object.entries(o).flatMap(([k, v]) => paths(v, at ? `${at}.${k}` : k))
      : [at];
  const tested = new Set(paths(buildOvConf("/w", 1933, "http://127.0.0.1:1/v1", 8)));
  const untested = paths(conf).filter((p) => !tested.has(p));
  assertTrue(
    untested.length === 0,
    `README's ov.conf has fields the tests never start OpenViking with: ${untested}`,
  );
  for (
    const p of [
      "embedding.dense.provider",
      "embedding.dense.api_base",
      "embedding.dense.dimension",
      "vlm.api_base",
    ]
  ) {
    assertTrue(paths(conf).includes(p), `README's ov.conf sets ${p}`);
  }
  assertTrue(
    conf.server.port === 1933 && conf.embedding.dense.provider === "openai",
    "OpenAI-compatible, port 1933",
  );
  assertTrue(
    section.includes("python3 -m pip install openviking==") && section.includes("\nopenviking-server\n"),
  );
});
