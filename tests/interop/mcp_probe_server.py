"""A stdio MCP server for the ACP tests (official Python SDK): one tool, `probe_note`, which the
agent's model is offered once the agent was given this server. Each start is recorded in the
file named by the first argument, so a test sees where the agent started it."""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("handoff-probe")


@server.tool()
def probe_note(text: str) -> str:
    """Returns the text it was given, marked as noted."""
    return f"noted: {text}"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a", encoding="utf-8") as started:
            started.write("started\n")
    server.run("stdio")
