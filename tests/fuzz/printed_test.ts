/**
 * Fuzzing what the prompt hook prints, in both output formats: every text the server sends (context
 * `entries` and `rendered`, find URIs and abstracts, read contents, `profile.md`, listing paths and
 * abstracts, the user space's name) is hostile, through both recall stages; the
 * printed output must still be exactly our blocks — our markers at the start and end of each, no other
 * markup, no control or escape byte, within the cap.
 */

import fc from "fast-check";
import { assertTrue } from "../support/assert.ts";
import { DEFAULT_ENTRY, FakeOpenViking } from "../support/fake-openviking.ts";
import { makeContext, sandboxEnv } from "../support/hook-context.ts";
import { tempDir } from "../support/temp.ts";
import { userPromptSubmit } from "../../memory/prompt.ts";
import { assertPrintedSafe } from "../support/printed.ts";
import { hostileText, params } from "./arbitraries.ts";

/** Hostile answers for every text the server sends. */
const hostileServer = fc.record({
  entryText: hostileText,
  entryUri: hostileText,
  rendered: hostileText,
  uri: hostileText,
  abstract: fc.oneof(fc.constant(""), hostileText),
  content: hostileText,
  profile: hostileText,
  leafPath: hostileText,
  leafAbstract: hostileText,
  space: fc.oneof(fc.constant("default"), hostileText.filter((s) => s.trim() !== "")),
});
type Hostile = typeof hostileServer extends fc.Arbitrary<infer T> ? T : never;

/** Makes `fake` answer every text with the hostile ones. */
function serve(fake: FakeOpenViking, h: Hostile): void {
  fake.context = {
    ...fake.context,
    entries: [{
      ...DEFAULT_ENTRY,
      uri: `viking://user/default/memories/events/${h.entryUri}.md`, // a memory is a .md file
      text: h.entryText,
    }],
    rendered: h.rendered,
  };
  const uri = `viking://user/default/memories/preferences/${h.uri}.md`;
  const other = "viking://user/default/memories/preferences/other.md";
  fake.findResults["viking://~/memories"] = [
    { context_type: "memory", uri, level: 2, score: 0.9, abstract: h.abstract },
    { context_type: "memory", uri: other, level: 2, score: 0.8, abstract: "" },
  ];
  fake.files.set(uri, h.content);
  fake.files.set(other, h.content);
  fake.dirs.set("viking://user", [{ name: h.space, isDir: true }]);
  const base = `viking://user/${h.space}/memories`;
  fake.files.set(`${base}/profile.md`, h.profile);
  fake.dirs.set(`${base}/preferences`, [
    { name: "a.md", rel_path: `${h.leafPath}.md`, isDir: false, abstract: h.leafAbstract },
  ]);
  fake.dirs.set(`${base}/entities`, [{ name: "b.md", rel_path: "b.md", isDir: false, abstract: h.profile }]);
}

Deno.test("fuzz: whatever the server says, the prompt hook prints exactly our blocks (context and find stages)", async () => {
  await using dir = await tempDir();
  await using context = await FakeOpenViking.start();
  await using find = await FakeOpenViking.start({ legacySearch: true });
  let n = 0;
  let printed = 0;
  await fc.assert(
    fc.asyncProperty(
      hostileServer,
      fc.constantFrom(0, 1),
      fc.constantFrom("digest", "full"),
      async (h, stage, format) => {
        const fake = [context, find][stage];
        serve(fake, h);
        const env = sandboxEnv(`${dir.path}/${fake.port}`, fake.url, {
          OPENVIKING_RECALL_PREFER_ABSTRACT: "1",
          OPENVIKING_RECALL_FORMAT: format,
        });
        const input = {
          hook_event_name: "UserPromptSubmit",
          session_id: `session_fuzz_${n++}`,
          cwd: "/home/user/proj",
          prompt: "how should I indent this file?",
        };
        const result = await userPromptSubmit(await makeContext("user-prompt-submit", input, env));
        const out = result.stdout ?? "";
        assertPrintedSafe(out);
        if (out) printed++;
      },
    ),
    params(60),
  );
  assertTrue(printed > 0, "some runs printed blocks");
  for (const fake of [context, find]) assertTrue(fake.requests.length > 0);
  assertTrue(find.requestsTo("GET /api/v1/content/read").length > 0, "the find stage read contents");
});
