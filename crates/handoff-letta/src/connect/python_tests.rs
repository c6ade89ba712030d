use std::{io::Write, process::Command};

use serde_json::json;

use super::*;

fn execute_task() -> HandoffTool {
    HandoffTool {
        name: "execute_task".to_owned(),
        description: "Hand a task over.\nSay \"\"\"what\"\"\" \\ to do.".to_owned(),
        input_schema: json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "agent_id": {"type": ["string", "null"], "description": "Calling agent."},
                "sync": {"type": ["boolean", "null"], "description": "Wait for the end."},
                "task_description": {"type": "string", "description": "What to do.\nIn detail."},
                "completion": {"anyOf": [{"type": "object"}, {"type": "null"}], "description": "Checks."},
            },
            "required": ["task_description", "agent_id"],
        })
        .as_object()
        .unwrap()
        .clone(),
    }
}

#[test]
fn the_letta_schema_is_handoffs_without_agent_id_and_with_one_type_each() {
    let tool = native_tool("handoff", &execute_task()).unwrap();
    assert_eq!(tool.json_schema["name"], "handoff_execute_task");
    assert_eq!(tool.json_schema["description"], execute_task().description);
    let params = &tool.json_schema["parameters"];
    assert_eq!(params["required"], json!(["task_description"]));
    assert_eq!(params["properties"].get("agent_id"), None);
    // Letta's sandbox converts arguments by one `type`; leaving one out keeps it unset.
    assert_eq!(
        params["properties"]["sync"],
        json!({"type": "boolean", "description": "Wait for the end."})
    );
    assert_eq!(
        params["properties"]["completion"],
        json!({"type": "object", "description": "Checks."})
    );
    assert_eq!(params["additionalProperties"], false);
    assert_eq!(tool.tags, ["handoff-connect", "handoff-connect:handoff"]);
}

#[test]
fn the_function_takes_the_same_arguments_documented_the_same_way() {
    let source = native_tool("handoff", &execute_task()).unwrap().source_code;
    assert!(
        source.starts_with(
            "def handoff_execute_task(task_description: str, completion: dict = None, sync: bool = None) -> str:"
        ) || source.starts_with(
            "def handoff_execute_task(task_description: str, sync: bool = None, completion: dict = None) -> str:"
        ),
        "{source}"
    );
    assert!(source.contains("        task_description (str): What to do.\n            In detail."));
    assert!(source.contains("        sync (bool): Wait for the end."));
    assert!(source.contains("        completion (dict): Checks."));
    assert!(!source.contains("agent_id"), "{source}");
    assert!(source.contains(r#"_os.environ.get("LETTA_AGENT_ID", "")"#));
    assert!(source.contains(r#"_os.environ.get("HANDOFF_MCP_URL", "")"#));
}

#[test]
fn argument_names_python_cannot_take_are_refused() {
    for bad in ["class", "with-dash", "_private", "9lives", "agent_state"] {
        let mut tool = execute_task();
        tool.input_schema["properties"]
            .as_object_mut()
            .unwrap()
            .insert(bad.to_owned(), json!({"type": "string"}));
        let err = native_tool("handoff", &tool).unwrap_err();
        assert!(err.to_string().contains(bad), "{bad}: {err}");
    }
}

#[test]
fn a_tool_without_arguments_takes_none() {
    let ping = HandoffTool {
        name: "ping".to_owned(),
        description: "Ping.".to_owned(),
        input_schema: json!({"type": "object"}).as_object().unwrap().clone(),
    };
    let tool = native_tool("handoff", &ping).unwrap();
    assert!(
        tool.source_code.starts_with("def handoff_ping() -> str:"),
        "{}",
        tool.source_code
    );
    assert!(
        tool.source_code.contains("for _k, _v in [] if"),
        "{}",
        tool.source_code
    );
}

#[test]
fn env_names_follow_the_prefix() {
    assert_eq!(
        env_names("handoff_b"),
        [
            "HANDOFF_B_MCP_URL".to_owned(),
            "HANDOFF_B_MCP_TOKEN".to_owned()
        ]
    );
}

/// Runs the generated source in the real Python (the tests' Python 3.11): it compiles, its
/// signature and docstring are what Letta and the LLM see, and without the agent's secrets
/// it names the fix instead of calling anything.
#[test]
fn the_source_runs_in_python() {
    let source = native_tool("handoff", &execute_task()).unwrap().source_code;
    let script = format!(
        r#"{source}

import inspect, os
for name in ("HANDOFF_MCP_URL", "HANDOFF_MCP_TOKEN"):
    os.environ.pop(name, None)
params = inspect.signature(handoff_execute_task).parameters
assert params["task_description"].default is inspect.Parameter.empty, params
assert params["sync"].default is None, params
assert '"""what"""' in handoff_execute_task.__doc__, handoff_execute_task.__doc__
try:
    handoff_execute_task(task_description="x")
except RuntimeError as error:
    assert "handoff letta connect" in str(error), error
    print("OK")
"#
    );
    assert_python_says_ok(&script);
}

/// Runs `script` in the real Python; it must print `OK`.
fn assert_python_says_ok(script: &str) {
    let mut child = Command::new("python3")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 is needed by the tests");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "OK",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Against a loopback server answering as Handoff does: a three-line tool error reaches the
/// model on one line, whole, and every text names the tools as the agent sees them.
#[test]
fn errors_come_whole_on_one_line_and_texts_use_the_agents_tool_names() {
    let source = native_tool("handoff", &execute_task()).unwrap().source_code;
    let script = format!(
        r#"{source}

import http.server, json, os, threading

ANSWERS = [
    {{"isError": True, "content": [{{"type": "text", "text": "agent_id: not the caller\nThe agent is decided by Letta.\nFix: call execute_task without agent_id"}}]}},
    {{"content": [{{"type": "text", "text": "task_1 queued: no need to poll; get_task_status or list_tasks show it, handoff_get_task_status too"}}]}},
]

class Handoff(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps({{"jsonrpc": "2.0", "id": 1, "result": ANSWERS.pop(0)}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Handoff)
threading.Thread(target=server.serve_forever, daemon=True).start()
os.environ["HANDOFF_MCP_URL"] = "http://127.0.0.1:%d/mcp" % server.server_address[1]
os.environ["HANDOFF_MCP_TOKEN"] = "t"
os.environ["LETTA_AGENT_ID"] = "agent-1"
try:
    handoff_execute_task(task_description="x")
    raise AssertionError("no error")
except RuntimeError as error:
    assert str(error) == "agent_id: not the caller The agent is decided by Letta. Fix: call handoff_execute_task without agent_id", str(error)
text = handoff_execute_task(task_description="y")
assert text == "task_1 queued: no need to poll; handoff_get_task_status or handoff_list_tasks show it, handoff_get_task_status too", text
print("OK")
"#
    );
    assert_python_says_ok(&script);
}
