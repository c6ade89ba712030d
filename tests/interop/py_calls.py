"""Runs a list of tool calls through the official Python MCP SDK (one session).

usage: py_calls.py URL AGENT_ID [TOKEN] < calls.json
AGENT_ID `-` sends no x-agent-id header; TOKEN is sent as a bearer token.
calls.json is a JSON array; each item is {"name": ..., "arguments": {...}} or
{"parallel": [call, ...]} (sent concurrently). Prints a JSON array with one result per call:
{"is_error": bool, "structured": {...} | null, "text": "...", "meta": {...} | null,
"progress": [messages]} (a list for parallel items). A failed call's machine-readable body is
meta["handoff/error"]; its text is words for a model.
Exits non-zero on any protocol failure.
"""

import asyncio
import faulthandler
import json
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def call(client, item):
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    result = await client.call_tool(
        item["name"], item.get("arguments", {}), read_timeout_seconds=30, progress_callback=on_progress
    )
    text = result.content[0].text if result.content else ""
    return {
        "is_error": bool(result.is_error),
        "structured": result.structured_content,
        "text": text,
        "meta": result.meta,
        "progress": progress,
    }


async def main(url, agent, token=None):
    calls = json.load(sys.stdin)
    headers = {}
    if agent != "-":
        headers["x-agent-id"] = agent
    if token:
        headers["authorization"] = f"Bearer {token}"
    http = create_mcp_http_client(headers=headers)
    results = []
    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        for item in calls:
            if "parallel" in item:
                results.append(list(await asyncio.gather(*(call(client, c) for c in item["parallel"]))))
            else:
                results.append(await call(client, item))
    print(json.dumps(results))


if __name__ == "__main__":
    # If this client ever hangs, its stack shows where (the test harness prints stderr).
    faulthandler.dump_traceback_later(45, exit=True)
    asyncio.run(main(*sys.argv[1:4]))
