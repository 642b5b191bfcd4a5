/**
 * OpenViking's MCP tools as the server lists them (its 15 tools, schemas in plain types), used to answer
 * `tools/list` while the server cannot be reached and no list from an earlier session is cached. Kimi Code
 * asks for the tool list once, when the session starts, so this list is what the model can use all session.
 * Pure data.
 */

/** An MCP tool definition as `tools/list` returns it. */
export interface ToolDefinition {
  name: string;
  description?: string;
  inputSchema: { type: "object"; properties?: Record<string, unknown>; required?: string[] };
  [key: string]: unknown;
}

const str = (description: string, extra: Record<string, unknown> = {}) => ({
  type: "string",
  description,
  ...extra,
});
const int = (description: string, extra: Record<string, unknown> = {}) => ({
  type: "integer",
  description,
  ...extra,
});
const num = (description: string, extra: Record<string, unknown> = {}) => ({
  type: "number",
  description,
  ...extra,
});
const bool = (description: string, dflt = false) => ({ type: "boolean", description, default: dflt });
const strList = (description: string) => ({ type: "array", items: { type: "string" }, description });

function tool(
  name: string,
  description: string,
  properties: Record<string, unknown> = {},
  required: string[] = [],
): ToolDefinition {
  return {
    name,
    description,
    inputSchema: required.length ? { type: "object", properties, required } : { type: "object", properties },
  };
}

/** The built-in catalog of OpenViking's MCP tools. */
export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  tool(
    "find",
    "Semantic search over viking:// memories, resources and skills; returns matching URIs with abstracts.",
    {
      query: str("What to look for."),
      target_uri: str("Restrict the search to this viking:// subtree.", { default: "" }),
      limit: int("Maximum results.", { default: 10 }),
      min_score: num("Minimum relevance score (0-1).", { default: 0.35 }),
      level: { type: "array", items: { type: "integer" }, description: "Context levels to include." },
      context_type: strList("Context types to include (memory, resource, skill)."),
    },
    ["query"],
  ),
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
  tool("tree", "Show the viking:// directory tree.", {
    uri: str("Root of the tree.", { default: "viking://" }),
    level_limit: int("Maximum depth.", { default: 3 }),
    node_limit: int("Maximum entries.", { default: 1000 }),
    include_abstract: bool("Include each entry's abstract."),
  }),
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
  tool("write", "Write a viking:// file (replace, append or create).", {
    uri: str("The viking:// file."),
    content: str("Text to write."),
    mode: str("replace, append or create.", { enum: ["replace", "append", "create"], default: "replace" }),
    wait: bool("Wait until the server has processed the file."),
    timeout: num("Seconds to wait when wait=true."),
  }, ["uri", "content"]),
  tool("edit", "Replace text in a viking:// file.", {
    uri: str("The viking:// file."),
    old_string: str("Exact text to replace."),
    new_string: str("Replacement text."),
    replace_all: bool("Replace every occurrence."),
    wait: bool("Wait until the server has processed the file."),
    timeout: num("Seconds to wait when wait=true."),
  }, ["uri", "old_string", "new_string"]),
  tool("add_resource", "Add a file, directory or URL to OpenViking as a resource (optionally watched).", {
    path: str("Local path or URL to add.", { default: "" }),
    temp_file_id: str("Id of an uploaded temporary file.", { default: "" }),
    add_type: str("Kind of resource.", { default: "" }),
    description: str("What the resource is.", { default: "" }),
    watch_interval: num("Re-import every N minutes (0 = never).", { default: 0 }),
    processing_mode: str("How the server processes it."),
    to: str("Target viking:// URI.", { default: "" }),
    parent: str("Parent viking:// URI.", { default: "" }),
    tags: strList("Tags."),
    tag_mode: str("replace or merge.", { default: "replace" }),
  }),
  tool("list_watches", "List watched resources."),
  tool("cancel_watch", "Stop watching a resource.", { to_uri: str("The watched viking:// URI.") }, [
    "to_uri",
  ]),
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
  tool("health", "Check that the OpenViking server is healthy."),
];
