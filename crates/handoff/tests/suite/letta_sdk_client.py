"""Letta 0.16.8's MCP client pattern, with the MCP Python SDK Letta installs (1.12.4).

Each tool call opens a fresh session, as letta/services/mcp/ does: streamablehttp_client with
the X-Agent-Id header, ClientSession, initialize, list_tools, call_tool, then leaving the
contexts (DELETE). Prints one JSON report: the SDK version, the negotiated protocol, each call's
text (parts joined, as Letta passes them to the agent) and structured result (which Letta drops)
and every warning or error the SDK logged.

    python letta_sdk_client.py URL AGENT_ID ROUNDS
"""

import asyncio
import json
import logging
import sys
from contextlib import AsyncExitStack
from importlib.metadata import version

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


class Recorder(logging.Handler):
    """Keeps every record of WARNING or above, so the report can show them."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(f"{record.name}: {record.getMessage()}")


async def one_call(url, agent, tool, args):
    """One Letta tool call: a session of its own, ended when the contexts close."""
    async with AsyncExitStack() as stack:
        read, write, _ = await stack.enter_async_context(
            streamablehttp_client(url, headers={"X-Agent-Id": agent})
        )
        session = await stack.enter_async_context(ClientSession(read, write))
        init = await session.initialize()
        await session.list_tools()
        result = await session.call_tool(tool, args)
        text = "".join(c.text for c in result.content if c.type == "text")
        return init.protocolVersion, text, result.structuredContent, bool(result.isError)


async def main(url, agent, rounds):
    protocol, first, structured, _ = await one_call(
        url, agent, "execute_task", {"task_description": "echo from-letta-pattern"}
    )
    task_id = structured["task_id"]
    calls = [{"tool": "execute_task", "text": first, "structured": structured}]
    for i in range(rounds):
        for tool, args in [
            ("get_task_status", {"task_id": task_id}),
            ("ping", {"message": f"round-{i}"}),
        ]:
            protocol, text, structured, is_error = await one_call(url, agent, tool, args)
            calls.append({"tool": tool, "text": text, "structured": structured, "is_error": is_error})
    return {"task_id": task_id, "protocol": protocol, "calls": calls}


if __name__ == "__main__":
    recorder = Recorder()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger().addHandler(recorder)
    report = asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    report["sdk"] = version("mcp")
    report["logged"] = recorder.lines
    print(json.dumps(report))
