/** Which of OpenViking's MCP tools the model is offered, and the built-in catalog served while the server is down. */

/** An MCP tool definition as `tools/list` returns it. */
export interface ToolDefinition {
  name: string;
  description?: string;
  inputSchema: { type: "object"; properties?: Record<string, unknown>; required?: string[] };
  [key: string]: unknown;
}

const prop = (type: string) => (description: string, extra = {}) => ({ type, description, ...extra });
const [str, int, num] = [prop("string"), prop("integer"), prop("number")];
const bool = (description: string, dflt = false) => ({ type: "boolean", description, default: dflt });
const strList = (description: string) => ({ type: "array", items: { type: "string" }, description });

const tool = (name: string, description: string, properties: Record<string, unknown>, required: string[]) =>
  ({ name, description, inputSchema: { type: "object", properties, required } }) satisfies ToolDefinition;

/** The tools memory needs, in OpenViking's names: search, read and browse, remember, forget. */
export const MEMORY_TOOLS = ["search", "read", "list", "remember", "grep", "glob", "forget"] as const;

/** One of the tools memory needs. */
export type MemoryTool = (typeof MEMORY_TOOLS)[number];

/** The tools of `tools` offered: memory's, order kept. */
export function offeredTools<T>(tools: readonly T[]): T[] {
  const names = new Set<unknown>(MEMORY_TOOLS);
  return tools.filter((t) => names.has((t as { name?: unknown } | null)?.name));
}

/** The built-in catalog: the tools memory needs, in OpenViking's order. */
export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  tool(
    "search",
    "Search with session context: mode=list returns matches, mode=context returns an assembled, " +
      "token-budgeted context block.",
    {
      query: str("What to look for."),
      target_uri: str("Restrict the search to this viking:// subtree (list mode).", { default: "" }),
      session_id: str("OpenViking session id, to use the conversation as context."),
      limit: int("Maximum results.", { default: 10 }),
      min_score: num("Minimum relevance score (0-1)."),
      mode: str("list or context.", { enum: ["list", "context"], default: "list" }),
      max_tokens: int("Token budget of the context block (context mode).", { default: 1600 }),
      purpose: str("chat or coding (context mode).", { enum: ["chat", "coding"] }),
      peer_scope: str("Whose memories: actor (this workspace) or all.", {
        enum: ["actor", "all"],
        default: "all",
      }),
    },
    ["query"],
  ),
  tool("read", "Read the full content of one or more viking:// files.", {
    uris: strList("viking:// URIs to read."),
  }, ["uris"]),
  tool("list", "List the entries of a viking:// directory.", {
    uri: str("The viking:// directory."),
    recursive: bool("List subdirectories too."),
  }, ["uri"]),
  tool("remember", "Store conversation messages as memory (extracted by the server).", {
    messages: {
      type: "array",
      description: "Messages to remember.",
      items: {
        type: "object",
        properties: {
          role: str("user or assistant.", { enum: ["user", "assistant"] }),
          content: str("Text."),
        },
        required: ["role", "content"],
      },
    },
  }, ["messages"]),
  tool("grep", "Search viking:// file contents with a pattern.", {
    uri: str("Where to search."),
    pattern: strList("Pattern(s) to match."),
    case_insensitive: bool("Ignore case."),
    node_limit: int("Maximum matches.", { default: 10 }),
  }, ["uri", "pattern"]),
  tool("glob", "Find viking:// paths matching a glob pattern.", {
    pattern: str("Glob pattern, e.g. **/*.md."),
    uri: str("Where to search.", { default: "viking://" }),
    node_limit: int("Maximum matches.", { default: 100 }),
  }, ["pattern"]),
  tool("forget", "Delete a viking:// memory or resource.", {
    uri: str("The viking:// URI to delete."),
    recursive: bool("Delete a directory and everything in it."),
  }, ["uri"]),
];
