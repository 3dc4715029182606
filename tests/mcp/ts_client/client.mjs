// Drives `rigway mcp` over stdio with the official TypeScript MCP SDK, as a third-party
// client would: one JSON line per step on stdout (tests/mcp/test_ts_client.py reads them).
// Usage: node client.mjs <command> [args…]   (e.g. rigway mcp --rig rig_…); the server
// inherits this process's environment (RIGWAY_API_KEY, RIGWAY_BASE_URL, …).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);

function report(step, fields) {
  process.stdout.write(JSON.stringify({ step, ...fields }) + "\n");
}

function summary(result) {
  return {
    isError: result.isError ?? false,
    kinds: result.content.map((block) => block.type),
    text: result.content.filter((block) => block.type === "text").map((block) => block.text).join("\n"),
    structured: result.structuredContent ?? null,
  };
}

function indexOf(observation, name) {
  const found = observation.targets.find((target) => target.name === name);
  if (!found) throw new Error(`no target named ${name}`);
  return found.index;
}

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "rigway-ts-test", version: "1.0.0" });
await client.connect(transport);
report("initialize", { server: client.getServerVersion() });

const listed = await client.listTools();
report("list_tools", {
  names: listed.tools.map((tool) => tool.name),
  observe_has_output_schema: Boolean(listed.tools.find((t) => t.name === "observe")?.outputSchema),
});

const observed = await client.callTool({ name: "observe", arguments: {} });
report("observe", summary(observed));

const checkbox = indexOf(observed.structuredContent, "Remember me");
const clicked = await client.callTool({ name: "click", arguments: { index: checkbox } });
report("click", { index: checkbox, ...summary(clicked) });

const username = indexOf(clicked.structuredContent, "Username");
const typed = await client.callTool({
  name: "type_text",
  arguments: { text: "ada", index: username },
});
report("type_text", { index: username, ...summary(typed) });

const shot = await client.callTool({ name: "screenshot", arguments: {} });
report("screenshot", {
  ...summary(shot),
  mime: shot.content[0]?.mimeType ?? null,
  bytes: shot.content[0]?.data ? Buffer.from(shot.content[0].data, "base64").length : 0,
});

const ended = await client.callTool({ name: "end_session", arguments: {} });
report("end_session", summary(ended));

await client.close();
report("closed", {});
