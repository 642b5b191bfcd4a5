/**
 * Fuzzing the install planners with random and mutated user documents — config.toml (generated TOML, then
 * edited: characters, lines, stray marker lines, an older block), mcp.json, plugins/installed.json and
 * ovcli.conf: each planner either produces a result that parses (and round-trips where it must) or refuses
 * with a message; it never throws. mcp.json documents in every layout: install edits only our member
 * (uninstall∘install gives the bytes back) and refuses exactly what JSON.parse refuses. The same documents through `install` / `uninstall` end to end in a Kimi
 * home: exit 0 with every written file parsing, or exit 1 with every file byte-identical.
 */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { tomlDocument } from "../install/toml_arbitrary.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { parseRegistry, planMcpInstall, planMcpUninstall } from "../../install/json-files.ts";
import { planRegistryInstall, planRegistryUninstall } from "../../install/json-files.ts";
import { planOvcli } from "../../install/ovcli.ts";
import { BLOCK_BEGIN, BLOCK_END, hookEntries, MCP_SERVER_NAME, PLUGIN_ID } from "../../install/spec.ts";
import { findBlocks, parseToml, planConfigInstall, planConfigUninstall } from "../../install/toml-block.ts";
import { deepEqual, isRecord as isObject } from "../../lib/parsed.ts";
import { fileText, mutated, nastyString, params } from "./arbitraries.ts";
import { MCP_ENTRY, mcpDocument } from "../install/json_arbitrary.ts";
import { changedRegion, deletionOf, insertionOf, parseLoose } from "../install/text_diff.ts";
import { installSandbox, opts } from "../install/helpers.ts";

const ENTRIES = hookEntries("/opt/ov/bin/openviking-kimi");
const NOW = new Date("2026-11-30T12:00:00.000Z");

const tomlPieces = fc.oneof(
  nastyString,
  fc.constantFrom(`\n${BLOCK_BEGIN}\n`, `\n${BLOCK_END}\n`, "\nhooks = 1\n", "\n[hooks]\n", '"""', "\r"),
  fc.constantFrom("node kimicode-hook.mjs", "/x/openviking-kimi hook stop").map((c) =>
    `\n[[hooks]]\nevent = "Stop"\ncommand = "${c}"\n`
  ),
);

/** config.toml as users have it: generated, edited, or already holding our (older) block. */
const configText = fileText(
  tomlDocument(),
  mutated(tomlDocument(), tomlPieces),
  tomlDocument().map((d) => {
    const p = planConfigInstall(d, hookEntries("/old/openviking-kimi"));
    return p.ok ? p.after! : d;
  }).chain((d) => fc.oneof(fc.constant(d), mutated(fc.constant(d), tomlPieces))),
);

const mcpText = fileText(
  '{\n\t"mcpServers": {\n\t\t"other": {"command": "x", "args": ["y"]}\n\t},\n\t"z": 1\n}\n',
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
    .map((servers) => JSON.stringify({ mcpServers: servers }, null, 2)),
  fc.constantFrom({ command: "node", args: ["/x/mcp-proxy.mjs"] }, MCP_ENTRY)
    .map((openviking) => JSON.stringify({ mcpServers: { openviking } })),
  fc.constantFrom("\ufeff{}", ""),
);

const plugins = [{ id: "other", root: "/p/other", enabled: true }, {
  id: PLUGIN_ID,
  root: "/p/ov",
  enabled: false,
}];
const registryText = fileText(
  JSON.stringify({ version: 1, plugins }, null, 2),
  fc.array(
    fc.record({ id: fc.oneof(fc.constant(PLUGIN_ID), nastyString), root: nastyString }, { requiredKeys: [] }),
  )
    .map((plugins) => JSON.stringify({ version: 1, plugins })),
);

const parsesAsJsonObject = (text: string) => {
  try {
    return isObject(JSON.parse(text.replace(/^\ufeff/, "")));
  } catch {
    return false;
  }
};

/** A refusal says why; else what a planner writes parses (`parses`), when it writes. */
function parsesOrRefuses(
  plan: { ok: true; after?: string; changed?: boolean } | { ok: false; error: string },
  parses: (text: string) => boolean,
  what: string,
): void {
  if (!plan.ok) assertTrue(plan.error.length > 0, `a refusal of ${what} says why`);
  else if (plan.changed !== false && plan.after !== undefined) {
    assertTrue(parses(plan.after), `${what} parses`);
  }
}

Deno.test("fuzz: config.toml, installed.json and ovcli.conf planners — a result that parses, or a refusal", () => {
  const creds = fc.record(
    { url: nastyString, apiKey: nastyString, account: nastyString, user: nastyString },
    {
      requiredKeys: [],
    },
  );
  const ovcli = fileText('{"url":"http://h:1","api_key":"k"}');
  fc.assert(
    fc.property(configText, registryText, ovcli, creds, (text, registry, conf, creds) => {
      const tomlParses = (t: string) => parseToml(t).ok;
      const install = planConfigInstall(text, ENTRIES);
      parsesOrRefuses(install, tomlParses, "config.toml");
      parsesOrRefuses(planConfigUninstall(text), tomlParses, "config.toml after uninstall");
      const parsed = install.ok ? parseToml(install.after!) : undefined;
      const hooks = parsed?.ok && Array.isArray(parsed.value.hooks) ? parsed.value.hooks : [];
      if (install.ok) {
        for (const e of ENTRIES) assertTrue(hooks.some((h) => deepEqual(h, e)), `hook ${e.event}`);
      }
      const blocks = text === undefined ? undefined : findBlocks(text);
      if (install.ok && blocks && "blocks" in blocks && blocks.blocks.length === 0) {
        const back = planConfigUninstall(install.after);
        assertTrue(back.ok && back.after === text, "uninstall gives back the user's bytes");
      }

      const registryParses = (t: string) => parseRegistry(t).ok;
      const ri = planRegistryInstall(registry, { root: "/k/r", originalSource: "/src" }, NOW);
      parsesOrRefuses(ri, registryParses, "installed.json");
      parsesOrRefuses(planRegistryUninstall(registry), registryParses, "installed.json after uninstall");
      const reg = ri.ok ? parseRegistry(ri.after) : undefined;
      if (reg) assertTrue(reg.ok && reg.value.plugins.some((p) => p.id === PLUGIN_ID && p.root === "/k/r"));

      const ov = planOvcli(conf, creds, "/h/.openviking/ovcli.conf");
      parsesOrRefuses(ov, parsesAsJsonObject, "ovcli.conf");
      if (ov.ok && ov.changed && (creds.apiKey ?? "").length >= 12) {
        const said = ov.summary.filter((l) => l.startsWith("api_key")).join(" ");
        assertTrue(!said.includes(creds.apiKey!), "the key is not shown");
      }
    }),
    params(1500),
  );
});

/** The document install creates when there is no mcp.json, without our entry: uninstall deletes it. */
const CREATED_EMPTY = '{\n  "mcpServers": {}\n}\n';

Deno.test("fuzz: mcp.json in any layout — install edits only our member; uninstall∘install gives the bytes back", () => {
  fc.assert(
    fc.property(mcpDocument, fc.boolean(), (doc, yes) => {
      const before = doc.text;
      const parsed = parseLoose(before) as Record<string, unknown>;
      const servers = (parsed.mcpServers ?? {}) as Record<string, unknown>;
      const install = planMcpInstall(before, MCP_ENTRY, { replaceOthers: yes });
      if ((doc.openviking === "upstream" || doc.openviking === "foreign") && !yes) {
        assertEquals(install.ok, false, "someone else's entry is refused without --yes");
        return;
      }
      assertTrue(install.ok, install.ok ? "" : install.error);
      if (!install.ok) return;
      const after = install.after!;
      // The parsed result is the parsed original plus our entry (one parser on both sides: same precision).
      assertEquals(parseLoose(after), {
        ...parsed,
        mcpServers: { ...servers, [MCP_SERVER_NAME]: MCP_ENTRY },
      });
      // Everything outside our member's span is unchanged.
      if (doc.span === undefined) assertTrue(insertionOf(before, after) !== undefined, "one insertion");
      else if (after !== before) {
        const { start, tail } = changedRegion(before, after);
        assertTrue(start >= doc.span.start && before.length - tail <= doc.span.end, "only our value changed");
      }
      assertEquals(install.changed, doc.openviking !== "ours");

      const back = planMcpUninstall(after);
      assertTrue(back.ok && back.changed);
      if (!back.ok) return;
      if (doc.openviking === "none" && doc.hasServers) {
        assertEquals(
          back.after,
          before === CREATED_EMPTY ? undefined : before,
          "uninstall∘install = identity",
        );
      } else if (doc.openviking === "none") {
        // A file without mcpServers keeps an empty one (it cannot be told from a file that had `{}`).
        const added = insertionOf(before, back.after!);
        assertTrue(added !== undefined && /"mcpServers"\s*:\s*\{\}$/.test(added), JSON.stringify(added));
        assertEquals(parseLoose(back.after!), { ...parsed, mcpServers: {} });
      } else {
        // The entry it replaced is gone with ours: the original minus that one member.
        const rest = { ...servers };
        delete rest[MCP_SERVER_NAME];
        if (back.after === undefined) {
          assertEquals(
            { ...parsed, mcpServers: rest },
            { mcpServers: {} },
            "only an empty mcpServers was left",
          );
        } else {
          assertTrue(deletionOf(before, back.after) !== undefined, "one deletion");
          assertEquals(parseLoose(back.after), { ...parsed, mcpServers: rest });
        }
      }
      // Uninstall straight away removes ours and leaves anyone else's.
      const un = planMcpUninstall(before);
      assertTrue(un.ok);
      if (un.ok && (doc.openviking === "ours" || doc.openviking === "old-ours")) {
        assertTrue(un.after === undefined || deletionOf(before, un.after) !== undefined);
      } else if (un.ok) assertEquals(un.after, before);
    }),
    params(1500),
  );
});

Deno.test("fuzz: mcp.json edits refuse exactly what JSON.parse refuses, and never throw", () => {
  const text = fc.oneof(
    mcpDocument.map((d) => d.text),
    mutated(
      mcpDocument.map((d) => d.text),
      fc.constantFrom(",", "}", "{", '"', "\\", ":", "]", " ", "\r", "1"),
    ),
  );
  fc.assert(
    fc.property(text, (t) => {
      let valid = true;
      try {
        JSON.parse(t.replace(/^\ufeff/, ""));
      } catch {
        valid = false;
      }
      const install = planMcpInstall(t, MCP_ENTRY, { replaceOthers: true });
      const uninstall = planMcpUninstall(t);
      if (!valid && t.trim() !== "") {
        assertEquals([install.ok, uninstall.ok], [false, false], JSON.stringify(t));
        return;
      }
      if (install.ok) {
        const doc = parseLoose(install.after!) as { mcpServers: Record<string, unknown> };
        assertEquals(doc.mcpServers[MCP_SERVER_NAME], MCP_ENTRY);
      } else assertTrue(/mcp\.json/.test(install.error));
      if (uninstall.ok && uninstall.changed && uninstall.after !== undefined) {
        assertTrue(parsesAsJsonObject(uninstall.after));
      }
    }),
    params(1500),
  );
});

Deno.test({
  name:
    "fuzz: install / uninstall in a Kimi home with random files — exit 0 and files that parse, or exit 1 and no change",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await using dir = await tempDir("ovk-fuzz-");
    let n = 0;
    const codes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        configText,
        mcpText,
        registryText,
        fc.constantFrom("install", "uninstall"),
        fc.constantFrom("config" as const, "plugin" as const),
        fc.boolean(),
        async (rawConfig, rawMcp, rawRegistry, command, mode, yes) => {
          // What a file holds once written: lone surrogates become U+FFFD.
          const [config, mcp, registry] = [rawConfig, rawMcp, rawRegistry].map((t) =>
            t === undefined ? undefined : new TextDecoder().decode(new TextEncoder().encode(t))
          );
          const root = `${dir.path}/${++n}`;
          const t = await installSandbox(root);
          const kimi = t.kimi;
          await Deno.mkdir(`${kimi}/plugins`);
          const files: Record<string, string | undefined> = {
            [`${kimi}/config.toml`]: config,
            [`${kimi}/mcp.json`]: mcp,
            [`${kimi}/plugins/installed.json`]: registry,
          };
          for (const [path, text] of Object.entries(files)) {
            if (text !== undefined) await Deno.writeTextFile(path, text);
          }
          const code = await (command === "install" ? runInstall : runUninstall)(
            t.ctx(),
            opts({ mode, yes }),
          );
          const lines = t.lines;
          const kind = `${command} ${mode} → ${code}`;
          codes.set(kind, (codes.get(kind) ?? 0) + 1);
          const now = async (p: string) => await Deno.readTextFile(p).catch(() => undefined);
          if (code === 1) {
            assertTrue(lines.some((l) => l.startsWith("ERR ")), "a refusal says why");
            for (const [path, text] of Object.entries(files)) {
              assertEquals(await now(path), text, `${path} untouched`);
            }
          } else {
            assertEquals(code, 0, lines.join("\n"));
            const cfg = await now(`${kimi}/config.toml`);
            if (cfg !== undefined && cfg !== config) assertTrue(parseToml(cfg).ok, "config.toml parses");
            const m = await now(`${kimi}/mcp.json`);
            if (m !== undefined && m !== mcp) assertTrue(parsesAsJsonObject(m), "mcp.json parses");
            const r = await now(`${kimi}/plugins/installed.json`);
            if (r !== undefined && r !== registry) assertTrue(parseRegistry(r).ok, "installed.json parses");
            for (const [path, text] of Object.entries(files)) {
              if (text !== undefined && (await now(path)) !== text) {
                assertEquals(await now(`${path}.bak`), text, `${path}.bak keeps the previous bytes`);
              }
            }
          }
          await Deno.remove(root, { recursive: true });
        },
      ),
      params(150),
    );
    console.log(`install fuzz: ${n} Kimi homes ${JSON.stringify(Object.fromEntries(codes))}`);
  },
});
