"""Drives a Handoff server through the requests agents send, in both MCP eras.

Used by generate.sh while the server runs under callgrind, so the functions these requests
execute are laid out together in the release binary. Usage: drive.py PORT
"""
import http.client
import json
import re
import sys
import time

PORT = int(sys.argv[1])
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "x-agent-id": "startup-order",
}
SESSION_ERA = "2025-06-18"
STATELESS_ERA = "2026-07-28"


def post(body, extra=None, method="POST"):
    """One request on a fresh connection; returns (response, body bytes)."""
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    headers = dict(HEADERS, **(extra or {}))
    connection.request(method, "/mcp", json.dumps(body) if body is not None else None, headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.status >= 400 and method == "POST":
        sys.exit(f"{body.get('method')}: HTTP {response.status}")
    return response, data


def session():
    """initialize + initialized; returns the headers of the session."""
    params = {"protocolVersion": SESSION_ERA, "capabilities": {},
              "clientInfo": {"name": "startup-order", "version": "1"}}
    response, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    headers = {"mcp-session-id": response.getheader("mcp-session-id"),
               "mcp-protocol-version": SESSION_ERA}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    return headers


def call(headers, request_id, name, arguments):
    """A tools/call in a session; returns the answer's text."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}
    return post(body, headers)[1].decode()


def stateless(request_id, method, params):
    """A 2026-07-28 request: no session, the era in `_meta` and the method in headers."""
    meta = {"io.modelcontextprotocol/protocolVersion": STATELESS_ERA,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "startup-order", "version": "1"}}
    headers = {"mcp-protocol-version": STATELESS_ERA, "mcp-method": method}
    if method == "tools/call":
        headers["mcp-name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params, _meta=meta)}
    _, data = post(body, headers)
    if b'"result"' not in data:
        sys.exit(f"stateless {method}: no result")


def main():
    headers = session()
    post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers)
    post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers)
    call(headers, 3, "ping", {"message": "startup-order"})
    text = call(headers, 4, "execute_task", {"task_description": "startup-order trace"})
    task = re.search(r"task_[a-z2-7]{26}", text).group(0)
    for request_id in range(10, 70):
        if re.search(r"completed|failed|cancelled", call(headers, request_id, "get_task_status",
                                                         {"task_id": task})):
            break
        time.sleep(0.5)
    else:
        sys.exit("the traced task did not finish")
    call(headers, 70, "list_tasks", {})
    call(headers, 71, "get_task_history", {"task_id": task})
    call(headers, 72, "get_task_files", {"task_id": task})
    call(headers, 73, "list_approvals", {})
    call(headers, 74, "send_task_message", {"task_id": task, "message": "finished?"})
    call(headers, 75, "get_task_status", {"task_id": "task_aaaaaaaaaaaaaaaaaaaaaaaaaa"})
    post(None, headers, method="DELETE")
    # Letta's pattern: a fresh session for every tool call.
    letta = session()
    call(letta, 1, "get_task_status", {"task_id": task})
    post(None, letta, method="DELETE")
    stateless(100, "tools/list", {})
    stateless(101, "tools/call", {"name": "ping", "arguments": {"message": "startup-order"}})
    stateless(102, "tools/call", {"name": "get_task_status", "arguments": {"task_id": task}})
    print("driven", task)


main()
