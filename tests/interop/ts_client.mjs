// Handoff interop check with the official TypeScript MCP SDK.
// usage: node ts_client.mjs http URL | node ts_client.mjs stdio HANDOFF_BINARY
// Prints one JSON object describing what the server answered; exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [mode, target] = process.argv.slice(2);
const transport =
  mode === "http"
    ? new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { "x-agent-id": "agent-ts" } },
      })
    : new StdioClientTransport({
        command: target,
        args: ["serve", "--stdio", "--agent-id", "agent-ts-stdio"],
        // The SDK passes only a safe default environment: the test's Handoff settings too.
        env: {
          ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("HANDOFF_"))),
          HANDOFF_LOG_FORMAT: "json",
          PATH: process.env.PATH ?? "",
        },
        stderr: "ignore",
      });

const client = new Client({ name: "handoff-interop-ts", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
// callTool validates structuredContent against each tool's outputSchema (Ajv).
const ping = await client.callTool({ name: "ping", arguments: { message: "from-ts" } });
const omitted = await client.callTool({ name: "ping" });
const health = await client.callTool({ name: "health", arguments: {} });
const bad = await client.callTool({ name: "ping", arguments: { message: 5 } });
let unknown = null;
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
} catch (error) {
  unknown = { code: error.code, message: error.message };
}
console.log(
  JSON.stringify({
    server: client.getServerVersion(),
    sessionId: transport.sessionId ?? null,
    tools: tools.tools.map((t) => t.name).sort(),
    ping: ping.structuredContent,
    pingText: ping.content[0].text,
    pingOmittedOk: omitted.structuredContent?.ok,
    health: health.structuredContent,
    bad: { isError: bad.isError, text: bad.content[0].text, meta: bad._meta },
    unknown,
  }),
);
await client.close();
