/**
 * Two projects' memories on one real OpenViking 0.5.2 server: how many of project B's appear in project A's
 * digests under each recall scope (README "What stays per workspace").
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { startRealOrSkip } from "../support/real-openviking.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
const USER = "viking://user/default";

/** Project A's memories, the user's preference, and project B's, where the server keeps each. */
const A = {
  [`${USER}/memories/events/atlas-release.md`]: "Atlas release 2.3 shipped the streaming tile encoder.",
  [`${USER}/peers/project-a/memories/events/atlas-deploy.md`]:
    "Atlas release deploys run from CI on every tag.",
};
const PREFERENCE = { [`${USER}/memories/preferences/indent.md`]: "The user indents TypeScript with tabs." };
const B = {
  [`${USER}/memories/events/borealis-release.md`]:
    "Borealis release 4.1 moved the billing database to Postgres 16.",
  [`${USER}/memories/entities/borealis-billing.md`]:
    "Borealis billing deploys its release with a nightly job.",
  [`${USER}/peers/project-b/memories/events/borealis-deploy.md`]:
    "Borealis release deploys run from the ops repository.",
};
/** What A's user asks. */
const PROMPTS = [
  "how do release deploys run here?",
  "what did the last release ship and which database does it use?",
  "how should I indent the release script?",
];

Deno.test({
  name: "two projects on one real server: B's memories in A's digests under all, actor and strict",
  ignore: REAL === "0",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const server = await startRealOrSkip("two projects on one real server");
  if (!server) return;
  await using home = await tempDir();
  const t0 = performance.now();
  console.log(`  server started in ${server.startupMs} ms`);
  try {
    for (const [uri, content] of Object.entries({ ...A, ...PREFERENCE, ...B })) {
      const w = await fetch(`${server.url}/api/v1/content/write`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ uri, content, mode: "create", wait: true }),
      });
      assertEquals(w.status, 200, `${uri}: ${await w.text()}`);
    }
    console.log(`  written in ${Math.round(performance.now() - t0)} ms`);
    const leaked: Record<string, number> = {};
    const shown: Record<string, string[]> = {};
    for (const scope of ["all", "actor", "strict"]) {
      shown[scope] = [];
      for (const text of PROMPTS) {
        const r = await runCli(["recall", text, "--json"], {
          clearEnv: true,
          env: {
            HOME: home.path,
            PATH: Deno.env.get("PATH") ?? "/usr/bin",
            OPENVIKING_URL: server.url,
            OPENVIKING_PEER_ID: "project-a",
            OPENVIKING_RECALL_PEER_SCOPE: scope,
            OPENVIKING_SCORE_THRESHOLD: "0", // every memory the server finds: the most a digest could leak
          },
        });
        const out = JSON.parse(r.stdout);
        assertEquals(out.failure, undefined, r.stdout);
        shown[scope].push(
          ...Object.keys({ ...A, ...PREFERENCE, ...B }).filter((u) => out.stdout.includes(u)),
        );
      }
      leaked[scope] = shown[scope].filter((u) => u in B).length;
    }
    console.log(`  recalled in ${Math.round(performance.now() - t0)} ms`);
    console.log(`  B's memories in A's digests (${PROMPTS.length} prompts): ${JSON.stringify(leaked)}`);
    assertTrue(leaked.all > 0 && leaked.actor > 0, "today B's memories reach A's digests");
    assertEquals(leaked.strict, 0);
    const strictShows = new Set(shown.strict);
    assertTrue(strictShows.has(`${USER}/peers/project-a/memories/events/atlas-deploy.md`), "A's peer memory");
    assertTrue(strictShows.has(`${USER}/memories/preferences/indent.md`), "the user's preference");
  } finally {
    await server.stop();
  }
});
