"""Sends one MCP request again and again on one keep-alive connection, for profile-op.sh.

Usage: profile-op.py PORT OP COUNT [floor]
OP: ping (the tool), get_task_status, tools/list. Against Handoff it opens a session
(2025-06-18; with PROFILE_ERA=stateless none: every request carries the 2026-07-28 `_meta` and
headers instead), submits one task for get_task_status and waits for it to end, prints "ready",
waits for a line on stdin, sends COUNT requests, prints "done REQUESTS_PER_SECOND". With
`floor` it skips the session and the task: the floor answers any body.
"""
import http.client
import json
import os
import re
import sys
import time

PORT, OP, COUNT = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
FLOOR = len(sys.argv) > 4 and sys.argv[4] == "floor"
STATELESS = os.environ.get("PROFILE_ERA") == "stateless"
connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
headers = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "x-agent-id": "profile",
}


def post(method, params, request_id=1):
    sent = dict(headers)
    if STATELESS:
        params = dict(params, _meta={
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "profile", "version": "1"},
        })
        sent.update({"mcp-protocol-version": "2026-07-28", "mcp-method": method})
        if method == "tools/call":
            sent["mcp-name"] = params["name"]
    body = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        body["id"] = request_id
    connection.request("POST", "/mcp", json.dumps(body), sent)
    response = connection.getresponse()
    data = response.read()
    if response.status >= 400:
        sys.exit(f"{method}: HTTP {response.status}: {data[:200]!r}")
    return response, data


def call(name, arguments):
    return post("tools/call", {"name": name, "arguments": arguments})[1].decode()


if not FLOOR and not STATELESS:
    response, _ = post("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "profile", "version": "1"}}, 0)
    headers["mcp-session-id"] = response.getheader("mcp-session-id")
    headers["mcp-protocol-version"] = "2025-06-18"
    post("notifications/initialized", {}, None)
task = None
if OP == "get_task_status" and not FLOOR:
    task = re.search(r"task_[a-z2-7]{26}", call("execute_task", {"task_description": "x"})).group(0)
    while '"status":"completed"' not in call("get_task_status", {"task_id": task}):
        time.sleep(0.2)
if OP == "tools/list":
    method, params = "tools/list", {}
elif OP == "ping":
    method, params = "tools/call", {"name": "ping", "arguments": {"message": "profile"}}
else:
    method, params = "tools/call", {"name": OP, "arguments": {"task_id": task or "task_x"}}
for _ in range(20):  # warm: caches, prepared statements, lazily built state
    post(method, params)
print("ready", flush=True)
sys.stdin.readline()
start = time.time()
for _ in range(COUNT):
    post(method, params)
print("done", round(COUNT / (time.time() - start)), flush=True)
