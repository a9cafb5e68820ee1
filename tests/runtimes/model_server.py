#!/usr/bin/env python3
"""A scripted stand-in for an LLM provider, for running real agent CLIs offline.

    python3 model_server.py --script SCRIPT.json --port-file PATH [--log LOG.jsonl]

Binds 127.0.0.1 on an ephemeral port, writes the port to PATH (atomically) and
serves until killed. It speaks four provider APIs:

  Anthropic Messages    POST /v1/messages            (Claude Code)
  OpenAI Responses      POST /v1/responses           (Codex)
  OpenAI Chat           POST /v1/chat/completions    (OpenCode, Pi)
  Gemini                POST /v1beta/models/M:streamGenerateContent?alt=sse,
                        POST /v1beta/models/M:generateContent   (Gemini CLI)

It is stateless: each answer is decided by the conversation carried in the
request, replayed against the script (see README.md beside this file):

  {"turns": [{"match": "REGEX", "steps": ["shell cmd {1}", ...], "final": "text {1}"}],
   "default_final": "text"}

Standard library only.
"""

import argparse
import gzip
import json
import os
import re
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# Shell tools, most specific first: Claude Code, Codex, OpenCode/Pi, Gemini.
SHELL_TOOLS = ["Bash", "exec_command", "shell_command", "shell", "bash", "run_shell_command"]
PLAIN_TEXT = "OK."
ROUTER_JSON = {"complexity_reasoning": "A simple scripted task.", "complexity_score": 1}

SCRIPT = {"turns": [], "default_final": "Nothing to do."}
LOG_PATH = None
LOG_LOCK = threading.Lock()
_COUNTER = [0]
_COUNTER_LOCK = threading.Lock()


def next_id(prefix):
    with _COUNTER_LOCK:
        _COUNTER[0] += 1
        n = _COUNTER[0]
    return "%s%s%04d" % (prefix, uuid.uuid4().hex[:16], n)


def log(entry):
    if not LOG_PATH:
        return
    line = json.dumps(entry, ensure_ascii=False)
    with LOG_LOCK:
        with open(LOG_PATH, "a", encoding="utf-8") as f:
            f.write(line + "\n")


# --------------------------------------------------------------------------
# Conversation flattening: every format becomes an ordered list of items
#   ("prompt", text)  any non-assistant text: system, user, developer, hook feedback
#   ("call", name)    an assistant tool call
#   ("result", None)  a tool result
#   ("say", text)     an assistant message with text and no tool call
# --------------------------------------------------------------------------


def text_of(content):
    """Text of a content value in any of the formats (string, parts list, dict)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (text_of(c) for c in content) if t)
    if isinstance(content, dict):
        if content.get("thought") is True:
            return ""
        if isinstance(content.get("text"), str):
            return content["text"]
        if "content" in content:
            return text_of(content["content"])
        if "parts" in content:
            return text_of(content["parts"])
    return ""


def flatten_anthropic(body):
    items = []
    if body.get("system"):
        items.append(("prompt", text_of(body["system"])))
    for msg in body.get("messages") or []:
        role = msg.get("role")
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            continue
        if role == "assistant":
            calls = [b for b in content if isinstance(b, dict)
                     and b.get("type") in ("tool_use", "server_tool_use")]
            for b in calls:
                items.append(("call", b.get("name")))
            if not calls:
                t = text_of([b for b in content if isinstance(b, dict) and b.get("type") == "text"])
                if t.strip():
                    items.append(("say", t))
            continue
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_result":
                items.append(("result", None))
            elif b.get("type") == "text":
                items.append(("prompt", b.get("text") or ""))
    return items


def flatten_responses(body):
    items = []
    if body.get("instructions"):
        items.append(("prompt", text_of(body["instructions"])))
    inp = body.get("input")
    if isinstance(inp, str):
        inp = [{"type": "message", "role": "user", "content": inp}]
    for it in inp or []:
        if not isinstance(it, dict):
            continue
        typ = it.get("type") or ("message" if "role" in it else None)
        if typ == "message":
            t = text_of(it.get("content"))
            if it.get("role") == "assistant":
                if t.strip():
                    items.append(("say", t))
            else:
                items.append(("prompt", t))
        elif typ in ("function_call", "custom_tool_call", "local_shell_call",
                     "tool_search_call", "web_search_call"):
            items.append(("call", it.get("name") or typ))
        elif typ and typ.endswith("_output"):
            items.append(("result", None))
    return items


def flatten_chat(body):
    items = []
    for msg in body.get("messages") or []:
        role = msg.get("role")
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            for c in calls:
                items.append(("call", (c.get("function") or {}).get("name")))
            if not calls:
                t = text_of(msg.get("content"))
                if t.strip():
                    items.append(("say", t))
        elif role in ("tool", "function"):
            items.append(("result", None))
        else:
            items.append(("prompt", text_of(msg.get("content"))))
    return items


def flatten_gemini(body):
    items = []
    si = body.get("systemInstruction") or body.get("system_instruction")
    if si:
        items.append(("prompt", text_of(si)))
    for c in body.get("contents") or []:
        parts = c.get("parts") or []
        if c.get("role") == "model":
            calls = [p for p in parts if isinstance(p, dict) and "functionCall" in p]
            for p in calls:
                items.append(("call", p["functionCall"].get("name")))
            if not calls:
                t = text_of([p for p in parts if isinstance(p, dict) and not p.get("thought")])
                if t.strip():
                    items.append(("say", t))
            continue
        for p in parts:
            if not isinstance(p, dict):
                continue
            if "functionResponse" in p:
                items.append(("result", None))
            elif isinstance(p.get("text"), str):
                items.append(("prompt", p["text"]))
    return items


# --------------------------------------------------------------------------
# Script replay
# --------------------------------------------------------------------------


def substitute(value, groups):
    """Replaces {0}, {1}, ... in strings (recursively) by the regex groups."""
    if isinstance(value, str):
        def rep(m):
            i = int(m.group(1))
            return (groups[i] or "") if i < len(groups) else m.group(0)
        return re.sub(r"\{(\d+)\}", rep, value)
    if isinstance(value, list):
        return [substitute(v, groups) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, groups) for k, v in value.items()}
    return value


def decide(items):
    """Returns ("text", str) or ("step", step, groups) for a conversation."""
    turns = SCRIPT.get("turns") or []
    for idx in range(len(items) - 1, -1, -1):
        kind, text = items[idx]
        if kind != "prompt" or not text:
            continue
        for turn in turns:
            m = re.search(turn["match"], text, re.S | re.M)
            if not m:
                continue
            groups = [m.group(0)] + list(m.groups())
            # Every assistant action after the matching prompt consumed one step.
            done = sum(1 for k, _ in items[idx + 1:] if k in ("call", "say"))
            steps = turn.get("steps") or []
            if done < len(steps):
                return ("step", steps[done], groups)
            return ("text", substitute(turn.get("final", "Done."), groups))
    return ("text", SCRIPT.get("default_final", "Nothing to do."))


def schema_type(schema):
    t = (schema or {}).get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    return (t or "").lower()


def filler(name, schema, command):
    """A plausible value for a required argument the step does not set."""
    schema = schema or {}
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    t = schema_type(schema)
    if t == "string":
        low = name.lower()
        if "desc" in low:
            return ("Run: " + command)[:80]
        if re.search(r"dir|cwd|path", low):
            return "."
        return "step"
    if t == "boolean":
        return False
    if t in ("integer", "number"):
        if "timeout" in name.lower():
            return 120000
        return schema.get("minimum", 0)
    if t == "array":
        return []
    if t == "object":
        return {}
    return "step"


def shell_call(tools, command):
    """Picks the offered shell tool and builds its arguments for `command`."""
    name = next((n for n in SHELL_TOOLS if n in tools), None)
    if name is None:
        name = next((n for n in tools if re.search(r"shell|bash|exec|command", n, re.I)), None)
    if name is None:
        return None
    schema = tools[name] or {}
    props = schema.get("properties") or {}
    key = "command" if "command" in props else ("cmd" if "cmd" in props else None)
    if key is None:
        key = "command" if name != "exec_command" else "cmd"
    args = {}
    if schema_type(props.get(key)) == "array":
        args[key] = ["bash", "-lc", command]
    else:
        args[key] = command
    for req in schema.get("required") or []:
        if req not in args:
            args[req] = filler(req, props.get(req), command)
    return name, args


def answer(items, tools):
    """("text", str) or ("call", tool_name, args) for a request offering `tools`."""
    d = decide(items)
    if d[0] == "text":
        return d
    _, step, groups = d
    if isinstance(step, dict):
        return ("call", substitute(step.get("tool"), groups), substitute(step.get("input") or {}, groups))
    step = substitute(step, groups)
    if step.startswith("say:"):
        return ("text", step[4:].lstrip())
    call = shell_call(tools, step)
    if call is None:
        return ("text", "model_server: no shell tool offered among %s" % sorted(tools))
    return ("call", call[0], call[1])


# --------------------------------------------------------------------------
# Tool listings per format: name -> JSON schema of the arguments
# --------------------------------------------------------------------------


def tools_anthropic(body):
    return {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if t.get("name")}


def tools_responses(body):
    out = {}
    for t in body.get("tools") or []:
        if t.get("name"):
            out[t["name"]] = t.get("parameters") or {}
        elif t.get("type") == "function" and isinstance(t.get("function"), dict):
            out[t["function"]["name"]] = t["function"].get("parameters") or {}
    return out


def tools_chat(body):
    out = {}
    for t in body.get("tools") or []:
        f = t.get("function") if isinstance(t.get("function"), dict) else t
        if f.get("name"):
            out[f["name"]] = f.get("parameters") or {}
    for f in body.get("functions") or []:
        if f.get("name"):
            out[f["name"]] = f.get("parameters") or {}
    return out


def tools_gemini(body):
    out = {}
    for t in body.get("tools") or []:
        for f in t.get("functionDeclarations") or t.get("function_declarations") or []:
            if f.get("name"):
                out[f["name"]] = f.get("parametersJsonSchema") or f.get("parameters") or {}
    return out


# --------------------------------------------------------------------------
# Answers per format
# --------------------------------------------------------------------------


def sse(events):
    """events: list of (event name or None, data dict or str)."""
    out = []
    for name, data in events:
        if name:
            out.append("event: %s\n" % name)
        if not isinstance(data, str):
            data = json.dumps(data)
        out.append("data: %s\n\n" % data)
    return "".join(out)


def reply_anthropic(body, reply):
    model = body.get("model") or "model"
    mid = next_id("msg_")
    usage = {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    if reply[0] == "call":
        block = {"type": "tool_use", "id": next_id("toolu_"), "name": reply[1], "input": reply[2]}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": reply[1]}
        stop = "end_turn"
    if not body.get("stream"):
        return "application/json", json.dumps({
            "id": mid, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage})
    if block["type"] == "tool_use":
        start = dict(block, input={})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(reply[2])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply[1]}
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "text/event-stream", sse(events)


def reply_responses(body, reply):
    model = body.get("model") or "model"
    rid = next_id("resp_")
    created = int(time.time())
    if reply[0] == "call":
        item = {"type": "function_call", "id": next_id("fc_"), "call_id": next_id("call_"),
                "name": reply[1], "arguments": json.dumps(reply[2]), "status": "completed"}
    else:
        item = {"type": "message", "id": next_id("msg_"), "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": reply[1], "annotations": []}]}
    usage = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2}
    base = {"id": rid, "object": "response", "created_at": created, "model": model}
    done = dict(base, status="completed", output=[item], usage=usage)
    if not body.get("stream"):
        return "application/json", json.dumps(done)
    seq = [0]

    def ev(name, data):
        data = dict({"type": name, "sequence_number": seq[0]}, **data)
        seq[0] += 1
        return (name, data)

    events = [ev("response.created", {"response": dict(base, status="in_progress", output=[])}),
              ev("response.in_progress", {"response": dict(base, status="in_progress", output=[])})]
    if item["type"] == "function_call":
        events.append(ev("response.output_item.added", {
            "output_index": 0, "item": dict(item, arguments="", status="in_progress")}))
        events.append(ev("response.function_call_arguments.delta", {
            "item_id": item["id"], "output_index": 0, "delta": item["arguments"]}))
        events.append(ev("response.function_call_arguments.done", {
            "item_id": item["id"], "output_index": 0, "arguments": item["arguments"]}))
    else:
        text = reply[1]
        events.append(ev("response.output_item.added", {
            "output_index": 0, "item": dict(item, content=[], status="in_progress")}))
        events.append(ev("response.content_part.added", {
            "item_id": item["id"], "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}}))
        events.append(ev("response.output_text.delta", {
            "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": text}))
        events.append(ev("response.output_text.done", {
            "item_id": item["id"], "output_index": 0, "content_index": 0, "text": text}))
        events.append(ev("response.content_part.done", {
            "item_id": item["id"], "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": text, "annotations": []}}))
    events.append(ev("response.output_item.done", {"output_index": 0, "item": item}))
    events.append(ev("response.completed", {"response": done}))
    return "text/event-stream", sse(events)


def reply_chat(body, reply):
    model = body.get("model") or "model"
    cid = next_id("chatcmpl-")
    created = int(time.time())
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if reply[0] == "call":
        call = {"id": next_id("call_"), "type": "function",
                "function": {"name": reply[1], "arguments": json.dumps(reply[2])}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": reply[1]}
        finish = "stop"
    if not body.get("stream"):
        return "application/json", json.dumps({
            "id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})

    def chunk(delta, finish_reason=None, **extra):
        return (None, dict({"id": cid, "object": "chat.completion.chunk", "created": created,
                            "model": model, "choices": [{"index": 0, "delta": delta,
                                                         "finish_reason": finish_reason}]}, **extra))

    if reply[0] == "call":
        events = [
            chunk({"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": call["id"], "type": "function",
                 "function": {"name": call["function"]["name"], "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": call["function"]["arguments"]}}]}),
        ]
    else:
        events = [chunk({"role": "assistant", "content": ""}), chunk({"content": reply[1]})]
    events.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, {"id": cid, "object": "chat.completion.chunk", "created": created,
                              "model": model, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return "text/event-stream", sse(events)


def json_from_schema(schema, name=""):
    """A small value that satisfies a JSON schema (Gemini's generateJson callers)."""
    schema = schema or {}
    if name == "next_speaker":
        return "user"
    if name in ROUTER_JSON:
        return ROUTER_JSON[name]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return json_from_schema(schema[key][0], name)
    t = schema_type(schema)
    if t == "object" or "properties" in schema:
        return {k: json_from_schema(v, k) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        return []
    if t in ("integer", "number"):
        return schema.get("minimum", 1)
    if t == "boolean":
        return False
    return "ok"


def reply_gemini(body, reply, stream, sse_mode):
    model = body.get("model") or "model"
    if reply[0] == "call":
        part = {"functionCall": {"name": reply[1], "args": reply[2]}}
    else:
        part = {"text": reply[1]}
    resp = {"candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": model}
    if not stream:
        return "application/json", json.dumps(resp)
    if sse_mode:
        return "text/event-stream", sse([(None, resp)])
    return "application/json", json.dumps([resp])


# --------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "model_server/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            data = b""
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "gzip":
            data = gzip.decompress(data)
        elif enc == "deflate":
            data = zlib.decompress(data)
        return data

    def send(self, status, ctype, payload):
        raw = payload.encode("utf-8") if isinstance(payload, str) else payload
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(raw)
        self.wfile.flush()

    def do_GET(self):
        path = urlsplit(self.path).path
        log({"time": time.time(), "method": "GET", "path": self.path})
        if path.rstrip("/").endswith("/models"):
            if "v1beta" in path:
                self.send(200, "application/json", json.dumps({"models": []}))
            else:
                self.send(200, "application/json", json.dumps({"object": "list", "data": []}))
        else:
            self.send(200, "application/json", "{}")

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.send(200, "application/json", "{}")

    def do_PUT(self):
        self.do_POST()

    def do_POST(self):
        raw = self.read_body()
        split = urlsplit(self.path)
        path = split.path
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        entry = {"time": time.time(), "method": "POST", "path": self.path,
                 "body": body if body is not None else raw.decode("utf-8", "replace")}
        if not isinstance(body, dict):
            body = {}
        try:
            status, ctype, payload, summary = self.route(path, split.query, body)
        except Exception as e:  # never break a run on a server bug: say it as text
            import traceback
            traceback.print_exc()
            status, ctype, payload, summary = 500, "application/json", json.dumps(
                {"error": {"type": "model_server_error", "message": repr(e)}}), "error: %r" % e
        entry["reply"] = summary
        log(entry)
        self.send(status, ctype, payload)

    def route(self, path, query, body):
        if path.endswith("/count_tokens"):
            return 200, "application/json", json.dumps({"input_tokens": 1}), "count_tokens"
        if path.endswith(":countTokens"):
            return 200, "application/json", json.dumps({"totalTokens": 1}), "countTokens"
        if path.endswith("/messages"):
            tools = tools_anthropic(body)
            reply = answer(flatten_anthropic(body), tools) if tools else ("text", PLAIN_TEXT)
            return (200,) + reply_anthropic(body, reply) + (reply,)
        if path.endswith("/responses"):
            tools = tools_responses(body)
            reply = answer(flatten_responses(body), tools) if tools else ("text", PLAIN_TEXT)
            return (200,) + reply_responses(body, reply) + (reply,)
        if path.endswith("/chat/completions"):
            tools = tools_chat(body)
            reply = answer(flatten_chat(body), tools) if tools else ("text", PLAIN_TEXT)
            return (200,) + reply_chat(body, reply) + (reply,)
        m = re.search(r"/models/([^/:]+):(streamGenerateContent|generateContent)$", path)
        if m:
            body = dict(body, model=m.group(1))
            stream = m.group(2) == "streamGenerateContent"
            tools = tools_gemini(body)
            if tools:
                reply = answer(flatten_gemini(body), tools)
            else:
                gc = body.get("generationConfig") or {}
                schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
                if schema:
                    reply = ("text", json.dumps(json_from_schema(schema)))
                elif not stream or gc.get("responseMimeType") == "application/json":
                    reply = ("text", json.dumps(ROUTER_JSON))
                else:
                    reply = ("text", PLAIN_TEXT)
            return (200,) + reply_gemini(body, reply, stream, "alt=sse" in query) + (reply,)
        return 200, "application/json", "{}", "unknown path"


def main():
    global LOG_PATH, SCRIPT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True, help="script JSON file")
    ap.add_argument("--port-file", required=True, help="file the port number is written to")
    ap.add_argument("--log", help="append one JSON line per request to this file")
    a = ap.parse_args()
    with open(a.script, encoding="utf-8") as f:
        SCRIPT = json.load(f)
    for turn in SCRIPT.get("turns") or []:
        re.compile(turn["match"])
    LOG_PATH = a.log
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    tmp = "%s.tmp.%d" % (a.port_file, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d" % port)
    os.replace(tmp, a.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
