/**
 * fast-check generators of mcp.json files as people and tools write them: numbers spelled any way (`1.0`,
 * `1E+2`, 25 digits), strings with escapes (`\u00e9`, `\/`) or raw unicode, keys spelled with escapes, any
 * indentation or one line, LF or CRLF, with or without BOM and final newline, other top-level keys, other
 * servers, and sometimes an `openviking` server (ours, an older one of ours, OpenViking's, someone else's).
 */

import fc from "fast-check";

/** A JSON value as text: scalars keep the exact spelling they were generated with. */
export type JsonNode =
  | { t: "raw"; text: string }
  | { t: "arr"; items: JsonNode[] }
  | { t: "obj"; members: { key: string; value: JsonNode }[] };

/** How a generated document is laid out. */
export interface Layout {
  /** Indentation unit; undefined for one line. */
  indent?: string;
  eol: string;
  colon: string;
  comma: string;
  bom: boolean;
  finalNewline: boolean;
}

/** A generated mcp.json. */
export interface McpDocument {
  text: string;
  /** Which `openviking` server it has. */
  openviking: "none" | "ours" | "old-ours" | "upstream" | "foreign";
}

/** Our entry, as an older config-mode install wrote it. */
const MCP_ENTRY = { command: "/opt/ov/bin/openviking-kimi", args: ["mcp"] };

const ENTRIES = {
  ours: MCP_ENTRY,
  "old-ours": { command: "/old/place/openviking-kimi", args: ["mcp"], env: { A: "1" } },
  upstream: { command: "node", args: ["/x/servers/mcp-proxy.mjs"] },
  foreign: { url: "http://ov.example:1933/mcp", headers: { Authorization: "Bearer x" } },
} as const;

/** A string literal, sometimes with more escapes than JSON.stringify uses. */
function literal(s: string, style: number): string {
  let out = JSON.stringify(s);
  if (style === 1) {
    out = out.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  }
  if (style === 2) out = out.replace(/\//g, "\\/");
  return out;
}

const stringLiteral = fc.tuple(
  fc.oneof(
    fc.string({ maxLength: 10 }),
    fc.string({ unit: "grapheme", maxLength: 6 }),
    fc.constant("café/é"),
  ),
  fc.nat(2),
).map(([s, style]) => literal(s, style));

const numberText = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.constantFrom("1.0", "-0", "0.0", "1e2", "1E+2", "2.50", "12345678901234567890", "-1.5e-3", "1e400"),
);

const scalar: fc.Arbitrary<JsonNode> = fc.oneof(
  stringLiteral,
  numberText,
  fc.constantFrom("true", "false", "null"),
).map((text) => ({ t: "raw", text }));

const keyText = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("__proto__", "é", "a b"));

const { node } = fc.letrec<{ node: JsonNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalar,
    fc.array(tie("node"), { maxLength: 3 }).map((items): JsonNode => ({ t: "arr", items })),
    fc.uniqueArray(fc.tuple(keyText, tie("node")), { maxLength: 3, selector: ([k]) => k })
      .map((ms): JsonNode => ({
        t: "obj",
        members: ms.map(([k, value]) => ({ key: literal(k, 0), value })),
      })),
  ),
}));

/** A plain value as a node (its scalars in JSON.stringify's spelling). */
function fromValue(v: unknown): JsonNode {
  if (Array.isArray(v)) return { t: "arr", items: v.map(fromValue) };
  if (v !== null && typeof v === "object") {
    return {
      t: "obj",
      members: Object.entries(v).map(([k, value]) => ({ key: JSON.stringify(k), value: fromValue(value) })),
    };
  }
  return { t: "raw", text: JSON.stringify(v) };
}

const layout: fc.Arbitrary<Layout> = fc.record({
  indent: fc.constantFrom(undefined, "  ", "    ", "\t", " "),
  eol: fc.constantFrom("\n", "\r\n"),
  colon: fc.constantFrom(": ", ":", " : "),
  comma: fc.constantFrom(",", ", "),
  bom: fc.boolean(),
  finalNewline: fc.boolean(),
});

/** Renders `n` onto `out.text`. */
function render(n: JsonNode, l: Layout, base: string, out: { text: string }): void {
  if (n.t === "raw") out.text += n.text;
  else {
    const [open, close] = n.t === "arr" ? ["[", "]"] : ["{", "}"];
    const parts: { key?: string; value: JsonNode }[] = n.t === "arr"
      ? n.items.map((value) => ({ value }))
      : n.members;
    out.text += open;
    const inner = l.indent === undefined ? base : base + l.indent;
    parts.forEach((p, i) => {
      if (i > 0) out.text += l.indent === undefined ? l.comma : ",";
      if (l.indent !== undefined) out.text += l.eol + inner;
      if (p.key !== undefined) out.text += p.key + l.colon;
      render(p.value, l, inner, out);
    });
    if (l.indent !== undefined && parts.length) out.text += l.eol + base;
    out.text += close;
  }
}

/** An mcp.json document with its layout and what it holds. */
export const mcpDocument: fc.Arbitrary<McpDocument> = fc.record({
  others: fc.uniqueArray(fc.tuple(keyText.filter((k) => k !== "mcpServers"), node), {
    maxLength: 3,
    selector: ([k]) => k,
  }),
  servers: fc.option(
    fc.uniqueArray(fc.tuple(keyText.filter((k) => k !== "openviking"), node), {
      maxLength: 3,
      selector: ([k]) => k,
    }),
    { nil: undefined },
  ),
  openviking: fc.constantFrom("none", "ours", "old-ours", "upstream", "foreign") as fc.Arbitrary<
    McpDocument["openviking"]
  >,
  escapedKeys: fc.boolean(),
  serversAt: fc.nat(),
  oursAt: fc.nat(),
  layout,
}).map((d) => {
  const servers = d.servers?.map(([k, value]) => ({ key: literal(k, 0), value }));
  let ours: JsonNode | undefined;
  if (servers && d.openviking !== "none") {
    ours = fromValue(ENTRIES[d.openviking]);
    const key = d.escapedKeys ? '"open\\u0076iking"' : '"openviking"';
    servers.splice(d.oursAt % (servers.length + 1), 0, { key, value: ours });
  }
  const members = d.others.map(([k, value]) => ({ key: literal(k, 0), value }));
  if (servers) {
    const key = d.escapedKeys ? '"mcp\\u0053ervers"' : '"mcpServers"';
    members.splice(d.serversAt % (members.length + 1), 0, { key, value: { t: "obj", members: servers } });
  }
  const out = { text: d.layout.bom ? "\ufeff" : "" };
  render({ t: "obj", members }, d.layout, "", out);
  if (d.layout.finalNewline) out.text += d.layout.eol;
  return {
    text: out.text,
    openviking: ours ? d.openviking : "none",
  };
});
