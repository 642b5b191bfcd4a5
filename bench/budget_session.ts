/**
 * The scripted session of the recall budget bench (scripts/budget.ts): a memory store of 80 memories in
 * three categories and a profile, as a user of a few months would have, and 20 prompts of one coding session
 * about them — one asked again right away, one again later, one too short for recall.
 */

/** A memory as written into the store: where, and its text (the server's abstract is its first line). */
export interface SeedMemory {
  path: string;
  text: string;
}

const pref = (name: string, text: string): SeedMemory => ({ path: `preferences/${name}.md`, text });
const entity = (name: string, text: string): SeedMemory => ({ path: `entities/${name}.md`, text });
const event = (name: string, text: string): SeedMemory => ({ path: `events/${name}.md`, text });

const MODULES: [string, string][] = [
  ["ingest", "reads GPS traces from the upload queue and validates them"],
  ["simplify", "reduces trace points with Douglas-Peucker before storage"],
  ["render", "turns stored geometry into vector tiles"],
  ["encoder", "writes MVT protobuf tiles, now as a streaming writer"],
  ["cache", "keeps rendered tiles in object storage keyed by style and zoom"],
  ["styles", "holds the map styles; a style change bumps the style version"],
  ["auth", "checks API tokens and rate limits per account"],
  ["billing", "counts tile requests per account for the monthly invoice"],
  ["geocode", "resolves place names through a self-hosted Nominatim"],
  ["routing", "computes walking routes on the OSM graph"],
  ["exports", "writes GPX and GeoJSON downloads of a user's traces"],
  ["webhooks", "notifies customers when a batch upload has been processed"],
  ["admin", "is the internal dashboard for support staff"],
  ["metrics", "exports Prometheus metrics of every route"],
  ["scheduler", "runs nightly jobs such as cache warming and cleanup"],
  ["search", "answers full-text queries over trace titles and tags"],
  ["sharing", "creates public links to traces with an expiry date"],
  ["privacy", "blurs the start and end of traces near a user's home"],
  ["import", "converts FIT and TCX files from sports watches"],
  ["elevation", "adds elevation from SRTM tiles to every point"],
];
const DECISIONS: [string, string][] = [
  ["keep the monorepo", "splitting it would double the CI minutes"],
  ["use zod for every API schema", "hand-written validators drifted from the types"],
  ["drop Node for the workers", "Deno starts faster and needs no build step"],
  ["cap uploads at 50 MB", "the security audit asked for request size limits"],
  ["store timestamps as UTC", "the Berlin and Lisbon offices disagreed about local time"],
  ["serve tiles through a CDN", "p95 latency from Asia was over a second"],
  ["pin PostGIS to 3.4", "3.5 changed ST_Simplify rounding"],
  ["review every migration in pairs", "the October incident locked the traces table"],
  ["ship weekly on Thursdays", "Friday deploys had no one on call afterwards"],
  ["keep feature flags in the database", "a config redeploy took eleven minutes"],
  ["write ADRs in docs/adr", "decisions kept being reopened in review"],
  ["log as JSON lines", "the log pipeline could not parse multi-line stack traces"],
  ["forbid default exports", "renames broke imports silently"],
  ["run fuzz tests nightly", "they take twenty minutes on two cores"],
  ["use UUIDv7 for new tables", "ordered ids keep the indexes small"],
  ["retire the v1 write routes", "only three customers still used them"],
];
const TOOLS: [string, string][] = [
  ["deno fmt", "formats everything with a line width of 110"],
  ["deno lint", "must be clean before every commit"],
  ["hyperfine", "is used for quick timing comparisons"],
  ["pgbench", "load-tests the trace queries before a release"],
  ["k6", "drives the tile endpoint load tests"],
  ["tmux", "holds one window per service while developing"],
  ["jq", "is the user's tool of choice for reading JSON logs"],
  ["sqlfluff", "lints the migrations in CI"],
];

/** Generated memories that make the store as large as a few months of work would. */
function generated(): SeedMemory[] {
  return [
    ...MODULES.map(([name, does]) =>
      entity(
        `module-${name}`,
        `- The ${name} module of Atlas (src/${name}/) ${does}; its tests are src/${name}/${name}_test.ts.`,
      )
    ),
    ...DECISIONS.map(([what, why], i) =>
      event(`decision-${i + 1}`, `- The team decided to ${what} because ${why}.`)
    ),
    ...TOOLS.map(([tool, use]) => pref(`tool-${tool.replace(/\s+/g, "-")}`, `- ${tool} ${use}.`)),
  ];
}

/** The store: 36 memories written by hand and 44 generated ones. */
export const SEED_MEMORIES: SeedMemory[] = [
  pref(
    "indentation",
    "- The user indents TypeScript with tabs, never spaces, and keeps lines under 110 columns.",
  ),
  pref(
    "quotes",
    "- The user prefers double quotes in TypeScript and JSON, single quotes only inside shell scripts.",
  ),
  pref(
    "commit-messages",
    "- Commit messages are imperative, say why rather than what, and never say WIP; one logical change per commit, " +
      "with the issue number in the body when there is one.",
  ),
  pref(
    "testing",
    "- The user wants a failing test before every bug fix and never accepts tests that assert nothing.",
  ),
  pref(
    "errors",
    "- Error messages must tell the user what to do next, in plain words, without stack traces.",
  ),
  pref("naming", "- Functions are named for what they return; booleans start with is, has or should."),
  pref("deps", "- New runtime dependencies need a very good reason; the user prefers the standard library."),
  pref("review", "- The user reviews diffs in the terminal and wants small pull requests under 400 lines."),
  pref(
    "docs",
    "- Every exported function gets a one-line JSDoc; longer explanations go to docs/ARCHITECTURE.md.",
  ),
  pref(
    "language",
    "- The user writes English in code and comments but likes answers in German when chatting.",
  ),
  pref("editor", "- The user edits in Neovim with the built-in LSP and formats on save with deno fmt."),
  pref("shell", "- The user's shell is fish; scripts in the repository stay POSIX sh for CI."),
  entity(
    "project-atlas",
    "- Atlas is the user's main project: a Deno service that ingests GPS traces and serves map tiles; its tests " +
      "run against a local PostGIS in Docker and take about four minutes on two cores.",
  ),
  entity(
    "ci",
    "- CI runs on GitHub Actions with two cores; the whole suite must stay under fifteen minutes.",
  ),
  entity(
    "database",
    "- Atlas stores traces in PostgreSQL 16 with PostGIS 3.4; migrations live in db/migrations.",
  ),
  entity(
    "teammate-mara",
    "- Mara owns the tile renderer and reviews every change to render/; she prefers Rust.",
  ),
  entity("teammate-jon", "- Jon maintains the ingestion workers and is on call on Tuesdays."),
  entity("deploy", "- Atlas deploys with a blue-green switch on Fly.io; a deploy takes eleven minutes."),
  entity("api", "- The public API is versioned under /v2; /v1 is frozen and answers only GET requests."),
  entity("monitoring", "- Alerts go to the #atlas-oncall channel; latency SLO is p95 under 300 ms."),
  entity("tiles", "- Tiles are vector tiles (MVT) at zoom 0 to 16, cached in S3-compatible storage."),
  entity("laptop", "- The user works on a 2021 MacBook Pro (M1 Pro, 32 GB) and a Linux desktop at home."),
  entity(
    "secrets",
    "- Secrets come from 1Password via op run; nothing secret is ever written to .env files.",
  ),
  entity(
    "benchmarks",
    "- Benchmarks live in bench/ and are compared as ratios within one run, never absolute times.",
  ),
  event(
    "2026-10-incident",
    "- On 2026-10-14 a migration locked the traces table for 40 minutes; since then every migration runs with " +
      "lock_timeout set and is tried on a copy of production first.",
  ),
  event(
    "2026-11-upgrade",
    "- In November the user upgraded Atlas from Deno 1.46 to Deno 2.9 and removed every JSR import.",
  ),
  event(
    "tile-cache-bug",
    "- A tile cache bug served stale tiles for a day because the cache key ignored the style version.",
  ),
  event(
    "flaky-test",
    "- The flaky test in ingest_test.ts was a race on the shared temp directory; fixed with per-test dirs.",
  ),
  event(
    "perf-win",
    "- Switching the tile encoder to a streaming writer cut p95 latency from 420 ms to 180 ms.",
  ),
  event("release-1-4", "- Release 1.4 shipped on 2026-11-20 with the new /v2/traces/batch endpoint."),
  event(
    "oncall-page",
    "- The last page was a full disk on the ingestion host; logs now rotate daily and keep 7 days.",
  ),
  event(
    "review-rust",
    "- Mara asked to rewrite the simplifier in Rust; the user decided to keep it in TypeScript for now.",
  ),
  event("docker-compose", "- The local stack moved from docker-compose v1 to docker compose v2 in October."),
  event(
    "pg-upgrade",
    "- PostgreSQL was upgraded from 15 to 16 in September with pg_upgrade --link; it took 6 minutes.",
  ),
  event(
    "security-audit",
    "- The October security audit asked for request size limits on every upload route.",
  ),
  event(
    "style-guide",
    "- The team agreed on a style guide in docs/STYLE.md; the user wrote the section on errors.",
  ),
  ...generated(),
];

/** profile.md of the store's user. */
export const SEED_PROFILE = [
  "# Profile",
  "",
  "Name: Robin Keller",
  "Role: senior backend engineer on the Atlas mapping service",
  "Languages: TypeScript (Deno), SQL, some Rust",
  "Works: Europe/Berlin, mornings; prefers short answers with code first",
  "",
  "## How Robin works",
  "- Small commits, a failing test first, ratios not absolute timings in benchmarks",
  "- Reads diffs in the terminal; dislikes tables wider than 100 columns",
  "- Asks for German in chat, English in code",
  "",
  "## Current focus",
  "- Moving the tile renderer to a streaming encoder",
  "- Keeping the CI suite under fifteen minutes on two cores",
].join("\n");

/** The session: 20 prompts (one asked again right away, one again later, one too short for recall). */
export const SESSION_PROMPTS: string[] = [
  "How should I indent the new tile encoder module?",
  "Write a commit message for the streaming encoder change",
  "What did we learn from the migration incident in October?",
  "Add a test for the tile cache key including the style version",
  "Add a test for the tile cache key including the style version",
  "Which database version does Atlas use and where are migrations?",
  "ok",
  "Who should review a change to render/?",
  "How long does a deploy take and how does it switch?",
  "Set up lock_timeout for the next migration",
  "What is our latency SLO and where do alerts go?",
  "Write a commit message for the streaming encoder change",
  "How do I get secrets into the local stack?",
  "Why was the ingest test flaky?",
  "Benchmark the encoder: how should the numbers be reported?",
  "What changed in release 1.4?",
  "Which shell should the CI script use?",
  "Explain the error message style we agreed on",
  "Should the simplifier be rewritten in Rust?",
  "Summarise what you know about my setup and preferences",
];
