"""Handoff interop check with the official Python MCP SDK.

usage: py_client.py http URL MODE     (MODE: auto = 2026-07-28 discover, legacy = initialize)
       py_client.py stdio HANDOFF_BINARY
Prints one JSON object describing what the server answered; exits non-zero on any failure.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def client_for(argv):
    if argv[1] == "http":
        http = create_mcp_http_client(headers={"x-agent-id": "agent-py"})
        return Client(streamable_http_client(argv[2], http_client=http), mode=argv[3])
    # The SDK passes only a safe default environment: the test's Handoff settings too.
    env = {k: v for k, v in os.environ.items() if k.startswith("HANDOFF_")}
    env["HANDOFF_LOG_FORMAT"] = "json"
    params = StdioServerParameters(
        command=argv[2], args=["serve", "--stdio", "--agent-id", "agent-py-stdio"], env=env
    )
    return Client(params)


async def main(argv):
    async with client_for(argv) as client:
        tools = await client.list_tools()
        ping = await client.call_tool("ping", {"message": "from-python"})
        omitted = await client.call_tool("ping")
        health = await client.call_tool("health", {})
        bad = await client.call_tool("ping", {"message": 5})
        print(
            json.dumps(
                {
                    "protocol": client.protocol_version,
                    "server": client.server_info.name if client.server_info else None,
                    "tools": sorted(t.name for t in tools.tools),
                    "ping": ping.structured_content,
                    "ping_text": ping.content[0].text,
                    "ping_omitted_ok": (omitted.structured_content or {}).get("ok"),
                    "health": health.structured_content,
                    "bad_is_error": bad.is_error,
                    "bad_text": bad.content[0].text,
                    "bad_meta": bad.meta,
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv))
