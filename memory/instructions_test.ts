import { assertEquals, assertStringIncludes } from "../tests/support/assert.ts";
import { COMMANDS, commandText, skillText } from "./instructions.ts";

const ROOT = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFile(new URL(path, ROOT));

Deno.test("the repository's plugin files are plugin mode's texts; recall and the skill point to `memories`", async () => {
  assertEquals(await read("skills/openviking-memory/SKILL.md"), skillText("plugin"));
  for (const c of COMMANDS) assertEquals(await read(`commands/${c.name}.md`), commandText("plugin", c));
  for (const mode of ["plugin", "config"] as const) {
    assertStringIncludes(skillText(mode), "`openviking-kimi memories`");
    assertStringIncludes(
      commandText(mode, COMMANDS.find((c) => c.name === "recall")!),
      "`openviking-kimi memories`",
    );
  }
});
