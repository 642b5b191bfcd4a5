/**
 * The documentation stays true to the code: every knob in README's table, CI runs README's test command,
 * README's command list is the generated top-level help.
 */

import { assertEquals, assertTrue } from "./support/assert.ts";
import { StatusSchema } from "../cli/status.ts";
import { RecallOutputSchema } from "../cli/recall.ts";
import { KNOBS } from "../openviking/config.ts";
import { VERSION } from "../lib/version.ts";
import { helpText } from "../cli/mod.ts";
import { buildOvConf, OPENVIKING_VERSION } from "./support/real-openviking.ts";

const root = new URL("../", import.meta.url);
const readme = await Deno.readTextFile(new URL("README.md", root));

// README's quick start names the test command (the two-commands test below): CI runs it word for word.
Deno.test("CI runs README's test command word for word; deno.json and the code agree on the version", async () => {
  const ci = await Deno.readTextFile(new URL(".ci/run", root));
  assertTrue(ci.split("\n").some((l) => l.trim() === "deno task test"), ".ci/run runs it");
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
  const two = ["npm install -g deno@2.9.6 && deno task -q install", "deno task test"];
  assertEquals(commands, two, "the quick start is two commands, one installing, one testing");
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
  assertEquals(untested, [], "README's ov.conf has fields the tests never start OpenViking with");
  for (
    const p of "embedding.dense.provider embedding.dense.api_base embedding.dense.dimension vlm.api_base"
      .split(" ")
  ) {
    assertTrue(paths(conf).includes(p), `README's ov.conf sets ${p}`);
  }
  assertTrue(
    conf.server.port === 1933 && conf.embedding.dense.provider === "openai",
    "OpenAI-compatible, port 1933",
  );
});

Deno.test("README's local server: installed into a venv (PEP 668), the tested version, ov.conf private before it holds a key", () => {
  const section = readme.slice(readme.indexOf("### No server yet?"), readme.indexOf("### From a release"));
  const script = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const commands = script.replace(/<<'EOF'\n[\s\S]*?\nEOF\n/, "<<'EOF'\n").split("\n").filter(Boolean);
  const venv = "~/.openviking/venv";
  assertEquals(commands, [
    `python3 -m venv ${venv}`,
    `${venv}/bin/pip install openviking==${OPENVIKING_VERSION}`,
    "touch ~/.openviking/ov.conf && chmod 600 ~/.openviking/ov.conf",
    "cat > ~/.openviking/ov.conf <<'EOF'",
    `${venv}/bin/openviking-server`,
  ]);
  assertTrue(!/^(?:python3 -m )?pip3? install/m.test(script), "no global pip install");
  for (const words of ["PEP 668", "pipx", "uv", "1.3 GB", "0600"]) {
    assertTrue(section.includes(words), `the section says ${words}`);
  }
});

/** A zod/mini schema's definition, as far as the walk below needs it. */
interface SchemaNode {
  _zod: {
    def: { type: string; shape?: Record<string, SchemaNode>; innerType?: SchemaNode; element?: SchemaNode };
  };
}

/** Every leaf field of `schema` as a path (`a.b`, `list[].c`; optional and nullable see through). */
function schemaLeaves(schema: SchemaNode, prefix = ""): string[] {
  const def = schema._zod.def;
  if (def.innerType) return schemaLeaves(def.innerType, prefix);
  if (def.type === "array" && def.element) return schemaLeaves(def.element, `${prefix}[]`);
  if (def.type === "object" && def.shape) {
    return Object.entries(def.shape).flatMap(([k, v]) => schemaLeaves(v, prefix ? `${prefix}.${k}` : k));
  }
  return [prefix];
}

/** The paths a README shape like `{a, b?, c: {d}, e: [{f}], g[]}` names, under `prefix`. */
function shapePaths(shape: string, prefix: string): string[] {
  const inner = shape.trim().replace(/^\{/, "").replace(/\}$/, "");
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= inner.length; i++) {
    const c = inner[i];
    if (c === "{" || c === "[") depth++;
    if (c === "}" || c === "]") depth--;
    if ((c === "," && depth === 0) || i === inner.length) {
      parts.push(inner.slice(start, i).trim());
      start = i + 1;
    }
  }
  return parts.filter(Boolean).flatMap((part) => {
    const m = /^(\w+)(\[\])?\??(?::\s*(\[)?(\{.*\})\]?)?$/.exec(part);
    if (!m) throw new Error(`cannot read "${part}" in README's ${prefix || "shape"}`);
    const path = `${prefix ? `${prefix}.` : ""}${m[1]}${m[2] || m[3] ? "[]" : ""}`;
    return m[4] ? shapePaths(m[4], path) : [path];
  });
}

/** Paths README's status table names: `a.b`, `.c` (a sibling of the first), and the shapes in its meanings. */
function tablePaths(table: string): string[] {
  const out: string[] = [];
  for (const row of table.split("\n").filter((l) => l.startsWith("| `"))) {
    const [field, meaning] = row.split("|").slice(1, 3);
    const names = [...field.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const parent = names[0].includes(".") ? names[0].slice(0, names[0].lastIndexOf(".")) : "";
    const paths = names.map((n) => n.startsWith(".") ? `${parent}${n}` : n);
    out.push(...paths);
    const shape = /`(\{.*\})`/.exec(meaning)?.[1];
    if (shape) out.push(...shapePaths(shape, paths[0]));
  }
  return out;
}

/** Fields the schema has that README does not name, and names README has that the schema lacks. */
function drift(leaves: string[], documented: string[]): { undocumented: string[]; unknown: string[] } {
  const named = new Set(documented);
  const known = new Set(leaves.flatMap((l) => l.split(".").map((_, i, a) => a.slice(0, i + 1).join("."))));
  for (const l of [...known]) if (l.endsWith("[]")) known.add(l.slice(0, -2));
  return {
    undocumented: leaves.filter((l) => !named.has(l)),
    unknown: documented.filter((d) => !known.has(d)),
  };
}

Deno.test("README's status --json table names every field of StatusSchema, and no field it lacks", () => {
  const at = readme.indexOf("`--json` prints one object (schema `StatusSchema`");
  const table = readme.slice(at, readme.indexOf("\n\n", readme.indexOf("| field", at)));
  const d = drift(schemaLeaves(StatusSchema as unknown as SchemaNode), tablePaths(table));
  assertEquals(d, { undocumented: [], unknown: [] });
});

Deno.test("README's recall --json shape names every field of RecallOutputSchema, and no field it lacks", () => {
  const at = readme.search(/`--json`:\s+`\{query/);
  const para = readme.slice(at, readme.indexOf("\n\n", at)).replace(/\n/g, " ");
  const main = /`(\{query[^`]*\})`/.exec(para)![1];
  const part = (name: string) => /`(\{[^`]*\})`/.exec(para.slice(para.indexOf(`\`${name}\` `)))?.[1] ?? "{}";
  const documented = [...shapePaths(main, ""), ...shapePaths(part("failure"), "failure")];
  documented.push(...shapePaths(part("paused"), "paused"));
  const d = drift(schemaLeaves(RecallOutputSchema as unknown as SchemaNode), documented);
  assertEquals(d, { undocumented: [], unknown: [] });
});

Deno.test("README's knob table says what a workspace file may do with each knob, in the code's words", () => {
  for (const knob of Object.values(KNOBS)) {
    const row = readme.split("\n").find((l) => l.startsWith(`| \`${knob.env}\` `));
    assertTrue(row !== undefined, `${knob.env} has a row in the knob table`);
    const cell = row!.split("|")[3].trim();
    assertEquals(cell, knob.workspace.may || "—", knob.env);
  }
});

Deno.test("every source file README and ARCHITECTURE name exists", () => {
  const ROOMS = "cli|kimi|memory|openviking|lib|mcp|install|tests|scripts|bench|hooks|runtime|wire|commands";
  const named = new RegExp(`(?<![\\w./~-])((?:${ROOMS})/[\\w./-]*\\.ts)\\b`, "g");
  const missing: string[] = [];
  for (const doc of ["README.md", "docs/ARCHITECTURE.md"]) {
    for (const [, path] of Deno.readTextFileSync(new URL(`../${doc}`, import.meta.url)).matchAll(named)) {
      try {
        Deno.statSync(new URL(`../${path}`, import.meta.url));
      } catch {
        missing.push(`${doc}: ${path}`);
      }
    }
  }
  assertEquals(missing, []);
});
