/**
 * Knob parsing at its edges: each kind of knob (boolean, integer, fraction, enumeration, list, path, optional)
 * with good, bad, boundary and odd values, from the environment (strings) and from files (any JSON value):
 * the value each ends as, and the warning a bad one gives. Written against the zod/mini table and kept when
 * the knobs became plain hand checks: the same inputs, the same values and words.
 */

import { assertEquals } from "../tests/support/assert.ts";
import { KNOBS, resolveSettings, type Settings } from "./config.ts";

type Name = keyof typeof KNOBS;

/** Resolves one knob set in ovcli.conf's `plugin` section: its value, whether it is present, the warnings. */
function fromFile(name: Name, value: unknown): { value: unknown; present: boolean; warnings: string[] } {
  const warnings: string[] = [];
  const s = resolveSettings({ env: { HOME: "/h" }, ovcli: { plugin: { [name]: value } } }, warnings);
  return { value: (s as Record<string, unknown>)[name], present: name in s, warnings };
}

/** Resolves one knob set in the environment. */
function fromEnv(name: Name, value: string): { value: unknown; warnings: string[] } {
  const warnings: string[] = [];
  const s = resolveSettings({ env: { HOME: "/h", [KNOBS[name].env]: value } }, warnings);
  return { value: (s as Record<string, unknown>)[name], warnings };
}

const warning = (name: string, shown: string, why: string) =>
  `ovcli.conf plugin "${name}": invalid value ${shown} (${why}); using the default`;

Deno.test("knobs: booleans take the words 1/0, true/false, yes/no, on/off in any case and blanks, and real booleans", () => {
  for (
    const [v, expected] of [["1", true], ["0", false], ["TRUE", true], [" yes ", true], ["On", true], [
      "OFF",
      false,
    ]]
  ) {
    assertEquals(fromEnv("enabled", v as string), { value: expected, warnings: [] }, String(v));
  }
  assertEquals(fromFile("redact", false), { value: false, present: true, warnings: [] });
  for (
    const [v, shown] of [["maybe", '"maybe"'], [1, "1"], [0, "0"], ["", '""'], [[], "[]"], [
      { a: 1 },
      '{"a":1}',
    ]]
  ) {
    assertEquals(fromFile("enabled", v), {
      value: true,
      present: true,
      warnings: [warning("enabled", shown as string, "expected boolean")],
    });
  }
});

Deno.test("knobs: integers are parsed from strings, bounded, whole and safe; the default replaces a bad one", () => {
  assertEquals(fromEnv("recallLimit", " 7 "), { value: 7, warnings: [] });
  assertEquals(fromEnv("recallLimit", "0x10"), { value: 16, warnings: [] });
  assertEquals(fromFile("recallLimit", 1).value, 1, "the lower bound is allowed");
  assertEquals(fromFile("recallLimit", 100).value, 100, "the upper bound is allowed");
  assertEquals(fromFile("recallDedupTurns", 0).value, 0, "zero where the range starts at 0");
  const cases: [unknown, string, string][] = [
    ["0", '"0"', "must be at least 1"],
    [-1, "-1", "must be at least 1"],
    [101, "101", "must be at most 100"],
    ["1e3", '"1e3"', "must be at most 100"],
    [1.5, "1.5", "expected int"],
    ["0.5", '"0.5"', "expected int"],
    ["lots", '"lots"', "expected number"],
    ["", '""', "expected number"],
    [" ", '" "', "expected number"],
    ["Infinity", '"Infinity"', "expected number"],
    ["NaN", '"NaN"', "expected number"],
    ["1_000", '"1_000"', "expected number"],
    [true, "true", "expected number"],
    [[5], "[5]", "expected number"],
    [1e20, "100000000000000000000", "must be at most 9007199254740991"],
  ];
  for (const [v, shown, why] of cases) {
    assertEquals(fromFile("recallLimit", v), {
      value: 10,
      present: true,
      warnings: [warning("recallLimit", shown, why)],
    }, shown);
  }
});

Deno.test("knobs: a fraction knob takes any finite number within its bounds", () => {
  assertEquals(fromEnv("scoreThreshold", "0.5"), { value: 0.5, warnings: [] });
  assertEquals(fromFile("scoreThreshold", 0).value, 0);
  assertEquals(fromFile("scoreThreshold", 1).value, 1);
  assertEquals(fromFile("scoreThreshold", 1.5), {
    value: 0.35,
    present: true,
    warnings: [warning("scoreThreshold", "1.5", "must be at most 1")],
  });
  assertEquals(fromFile("scoreThreshold", -1).warnings, [
    warning("scoreThreshold", "-1", "must be at least 0"),
  ]);
  assertEquals(fromFile("scoreThreshold", "-Infinity").warnings, [
    warning("scoreThreshold", '"-Infinity"', "expected number"),
  ]);
});

Deno.test("knobs: enumerations match case-insensitively after trimming; anything else names the choices", () => {
  assertEquals(fromEnv("peerSource", " Git "), { value: "git", warnings: [] });
  assertEquals(fromEnv("recallFormat", "FULL"), { value: "full", warnings: [] });
  for (const [v, shown] of [["svn", '"svn"'], [1, "1"], [["git"], '["git"]'], ["", '""']]) {
    assertEquals(fromFile("peerSource", v), {
      value: "git",
      present: true,
      warnings: [warning("peerSource", shown as string, 'must be "git" or "cwd" or "none"')],
    });
  }
});

Deno.test("knobs: lists come from comma-separated strings or arrays of strings", () => {
  assertEquals(fromEnv("bypassSessionPatterns", "a*, /tmp/** , ,"), {
    value: ["a*", "/tmp/**"],
    warnings: [],
  });
  assertEquals(fromFile("bypassSessionPatterns", "").value, [], "an empty string is an empty list");
  assertEquals(fromFile("bypassSessionPatterns", [" a "]).value, [" a "], "array items are kept as they are");
  assertEquals(fromFile("bypassSessionPatterns", ["a", 2]).warnings, [
    warning("bypassSessionPatterns", '["a",2]', "expected string"),
  ]);
  assertEquals(fromFile("bypassSessionPatterns", 5), {
    value: [],
    present: true,
    warnings: [warning("bypassSessionPatterns", "5", "expected array")],
  });
  const a = resolveSettings({ env: {} }).bypassSessionPatterns;
  a.push("x");
  assertEquals(
    resolveSettings({ env: {} }).bypassSessionPatterns,
    [],
    "each resolution gets its own default",
  );
});

Deno.test("knobs: an optional knob is absent unless configured, and absent again when its value is bad", () => {
  assertEquals(fromFile("recallMaxTokens", null), { value: undefined, present: false, warnings: [] });
  assertEquals(fromEnv("recallMaxTokens", "800"), { value: 800, warnings: [] });
  assertEquals(fromFile("recallMaxTokens", 63), {
    value: undefined,
    present: false,
    warnings: [warning("recallMaxTokens", "63", "must be at least 64")],
  });
  assertEquals(fromEnv("recallQueryExpansion", "AUTO"), { value: "auto", warnings: [] });
  assertEquals(fromFile("debugLogPath", 5).warnings, [warning("debugLogPath", "5", "expected string")]);
  assertEquals(fromFile("debugLogPath", "").warnings, [
    warning("debugLogPath", '""', "needs at least 1 character"),
  ]);
});

Deno.test("knobs: every bad value gives one warning, in the table's order; the good ones still apply", () => {
  const env = Object.fromEntries(Object.values(KNOBS).map((k) => [k.env, "bogus"]));
  env.OPENVIKING_RECALL_LIMIT = "7";
  const warnings: string[] = [];
  const s: Settings = resolveSettings({ env }, warnings);
  assertEquals(s.recallLimit, 7);
  assertEquals(s.recallLimitConfigured, true);
  assertEquals(s.recallDedupTurnsConfigured, false, "a bad value counts as not configured");
  const named = warnings.filter((w) => w.startsWith("OPENVIKING_")).map((w) => w.slice(0, w.indexOf(":")));
  const expected = Object.values(KNOBS).map((k) => k.env).filter((e) =>
    ![
      "OPENVIKING_RECALL_LIMIT",
      "OPENVIKING_BYPASS_SESSION_PATTERNS",
      "OPENVIKING_MCP_TOOLS",
      "OPENVIKING_DEBUG_LOG",
    ].includes(e)
  );
  assertEquals(named, expected);
  assertEquals(warnings.at(-1), 'debug log path "bogus" is not an absolute path; using the default');
});

/** A user's value (ovcli.conf), a workspace file's, and whether the workspace's is taken. */
type Case = [user: unknown, asked: unknown, taken: boolean];
/** What a workspace file may do with a knob (README's table says the same words), and cases that show it. */
interface Allowed {
  may: string;
  cases: Case[];
}

const off: Allowed = {
  may: "turn it off",
  cases: [[true, false, true], [false, true, false], [true, true, true]],
};
const on: Allowed = {
  may: "turn it on",
  cases: [[false, true, true], [true, false, false], [false, false, true]],
};
const any = (a: unknown, b: unknown): Allowed => ({ may: "set it", cases: [[a, b, true], [b, a, true]] });
const lower = (lo: number, hi: number): Allowed => ({
  may: "lower it",
  cases: [[hi, lo, true], [lo, hi, false], [lo, lo, true]],
});
const never = (a: unknown, b: unknown): Allowed => ({ may: "", cases: [[a, b, false], [b, a, false]] });

/** Every knob's rule for a workspace file: stricter, never weaker; never where data goes or who we are. */
const WORKSPACE: Record<Name, Allowed> = {
  enabled: off,
  autoRecall: off,
  autoCapture: off,
  workspacePeer: never(true, false),
  peerSource: never("git", "none"),
  bypassSession: on,
  bypassSessionPatterns: {
    may: "add to it",
    cases: [[["/a/**"], ["/a/**", "/b/**"], true], [["/a/**"], ["/b/**"], false], [[], ["x*"], true]],
  },
  recallLimit: any(10, 50),
  recallTokenBudget: any(2000, 9000),
  recallMaxContentChars: any(500, 5000),
  scoreThreshold: any(0.35, 0.1),
  recallPreferAbstract: any(true, false),
  recallPeerScope: { may: 'set it to "actor"', cases: [["all", "actor", true], ["actor", "all", false]] },
  recallDedupTurns: any(5, 0),
  recallMaxTokens: any(100, 8000),
  recallQueryExpansion: any("off", "auto"),
  recallFormat: any("digest", "full"),
  recallDigestLimit: any(5, 50),
  recallDigestChars: any(1200, 32_000),
  minQueryLength: any(3, 0),
  timeoutMs: lower(1000, 60_000),
  promptBudgetMs: lower(500, 17_000),
  interruptBudgetMs: lower(200, 2000),
  replayBudgetMs: lower(200, 10_000),
  captureWaitMs: lower(0, 10_000),
  profileTokenBudget: any(6000, 500),
  commitTurnThreshold: any(1, 100),
  captureMaxLength: lower(1000, 10_000_000),
  redact: on,
  writePathAsync: any(true, false),
  pendingReplayLimit: any(50, 5),
  pendingMaxRetries: never(3, 1),
  pendingTtlDays: never(7, 1),
  ledgerMaxBytes: lower(64 * 1024, 1024 ** 3),
  ledgerMaxAgeDays: lower(1, 3650),
  mcpTools: never(["memory"], ["all"]),
  debug: off,
  debugLogPath: never("/var/log/a.log", "/tmp/leak.log"),
};

const WS = "/repo/.openviking/config.json";

/** Resolves one knob with the user's value in ovcli.conf and a workspace file's. */
function withWorkspace(name: Name, user: unknown, asked: unknown) {
  const warnings: string[] = [];
  const sources = { env: { HOME: "/h" }, ovcli: { plugin: { [name]: user } } };
  const s = resolveSettings({ ...sources, workspace: [{ path: WS, value: { [name]: asked } }] }, warnings);
  return { value: (s as Record<string, unknown>)[name], warnings };
}

Deno.test("knobs: a workspace file makes every knob stricter, never weaker, in the direction its rule says", () => {
  assertEquals(Object.keys(WORKSPACE).sort(), Object.keys(KNOBS).sort(), "every knob has its rule here");
  for (const [name, { may, cases }] of Object.entries(WORKSPACE) as [Name, Allowed][]) {
    assertEquals(KNOBS[name].workspace.may, may, name);
    for (const [user, asked, taken] of cases) {
      const why = `${name}: ${JSON.stringify(user)} → ${JSON.stringify(asked)}`;
      const ignored = `${WS} "${name}": ${JSON.stringify(asked)} is ignored: a workspace file ${
        may ? `may only ${may}` : "may not set it"
      }`;
      assertEquals(withWorkspace(name, user, asked), {
        value: taken ? asked : user,
        warnings: taken ? [] : [ignored],
      }, why);
    }
  }
});

Deno.test("knobs: redaction stays on whatever a repository says; the user's own choice is the user's", () => {
  assertEquals(withWorkspace("redact", true, false), {
    value: true,
    warnings: [`${WS} "redact": false is ignored: a workspace file may only turn it on`],
  });
  const fromDefault: string[] = [];
  const s = resolveSettings(
    { env: {}, workspace: [{ path: WS, value: { redact: "off", debug: true } }] },
    fromDefault,
  );
  assertEquals([s.redact, s.debug], [true, false], "against the defaults too");
  assertEquals(fromDefault.length, 2);
  // The environment is the user's: it decides, and the workspace is not even weighed against it.
  const env: string[] = [];
  const e = resolveSettings(
    { env: { OPENVIKING_REDACT: "0" }, workspace: [{ path: WS, value: { redact: true } }] },
    env,
  );
  assertEquals([e.redact, env], [false, []]);
  // A bad workspace value leaves the user's own, and says so.
  assertEquals(withWorkspace("captureMaxLength", 5000, "huge"), {
    value: 5000,
    warnings: [`${WS} "captureMaxLength": invalid value "huge" (expected number); ignored`],
  });
});
