"""A legacy-session client that declares elicitation: calls execute_task (sync) as AGENT and
answers every elicitation/create with DECISION.

usage: py_elicit.py URL AGENT DESCRIPTION DECISION
Prints one JSON line: {"elicitations": [params...], "is_error": bool, "structured": {...}}.
"""

import asyncio
import faulthandler
import json
import sys

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url, agent, description, decision):
    seen = []

    async def on_elicit(context, params):
        seen.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.ElicitResult(
            action="accept", content={"decision": decision, "message": "answered by elicitation"}
        )

    http = create_mcp_http_client(headers={"x-agent-id": agent})
    async with Client(
        streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=on_elicit
    ) as client:
        result = await client.call_tool(
            "execute_task", {"task_description": description, "sync": True}, read_timeout_seconds=100
        )
    print(json.dumps({"elicitations": seen, "is_error": bool(result.is_error), "structured": result.structured_content}))


if __name__ == "__main__":
    faulthandler.dump_traceback_later(110, exit=True)
    asyncio.run(main(*sys.argv[1:5]))
