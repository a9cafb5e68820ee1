"""An MCP client for the integration tests (tests/it/mcp.rs), written on the
official Python SDK (`pip install mcp`): it starts `git-loopx mcp` as the SDK's
stdio client does, runs one scenario and prints one JSON object on stdout.

Usage: client.py SCENARIO REPO [ARG...]; the binary is $LOOPX_MCP_BIN, and
the server gets this process's environment (the test's hermetic one).
Exit 0 when the scenario ran (its findings are in the JSON); the test
decides what they mean.
"""

import json
import os
import subprocess
import sys
import time

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError


def params(repo, agent=None):
    env = dict(os.environ)
    if agent is not None:
        env["LOOPX_AGENT"] = agent
    return StdioServerParameters(
        command=os.environ["LOOPX_MCP_BIN"], args=["mcp"], env=env, cwd=repo
    )


def result(name, r):
    """One tool call's answer, as the test reads it."""
    text = r.content[0].text if r.content else None
    try:
        text = json.loads(text)
    except (TypeError, ValueError):
        pass
    return {
        "tool": name,
        "is_error": bool(r.is_error),
        "structured": r.structured_content,
        "text": text,
    }


async def call(client, name, arguments):
    try:
        return result(name, await client.call_tool(name, arguments))
    except MCPError as e:
        return {"tool": name, "protocol_error": e.code, "message": e.message}


async def turn(repo):
    """initialize, list tools, then one whole governed turn."""
    out = {}
    async with Client(params(repo), mode="legacy") as c:
        out["server"] = c.server_info.name if c.server_info else None
        out["protocol"] = c.protocol_version
        tools = (await c.list_tools()).tools
        out["tools"] = sorted(t.name for t in tools)
        out["schemas"] = {t.name: t.input_schema for t in tools}
        steps = [await call(c, "should_run", {"turn": "t-1"})]
        steps.append(await call(c, "next_todo", {"claim": True}))
        todo = steps[-1]["structured"]["todo"]["id"]
        steps.append(
            await call(
                c,
                "writeback",
                {
                    "todo": todo,
                    "outcome": "outcome_progress",
                    "summary": "Wrote the tokenizer",
                    "turn": "t-1",
                },
            )
        )
        steps.append(
            await call(c, "complete_todo", {"todo": todo, "evidence": "tests pass"})
        )
        steps.append(await call(c, "spend", {"turn": "t-1"}))
        out["steps"] = steps
        listed = (await c.list_resources()).resources
        out["resources"] = sorted(str(r.uri) for r in listed)
        status = await c.read_resource("loopx://status")
        out["status"] = json.loads(status.contents[0].text)
        goal = await c.read_resource("loopx://goal/main")
        out["goal"] = json.loads(goal.contents[0].text)
        prompts = (await c.list_prompts()).prompts
        out["prompts"] = {p.name: [a.name for a in p.arguments or []] for p in prompts}
        prompt = await c.get_prompt("turn", {"runtime": "claude-code"})
        out["prompt"] = prompt.messages[0].content.text
    return out


async def refusal(repo, todo, failing):
    """A claim on another agent's todo; a todo whose validate fails; then
    malformed arguments."""
    out = {}
    async with Client(params(repo), mode="legacy") as c:
        out["conflict"] = await call(c, "claim", {"todo": todo})
        # An agent completes only what it holds.
        out["claimed"] = await call(c, "claim", {"todo": failing})
        out["validation"] = await call(
            c, "complete_todo", {"todo": failing, "evidence": "it works"}
        )
        out["wrong_type"] = await call(c, "claim", {"todo": 7})
        out["unknown_field"] = await call(c, "claim", {"todo": todo, "agent": "agent-b"})
        out["missing_field"] = await call(c, "writeback", {"summary": "no outcome"})
        out["bad_enum"] = await call(
            c, "writeback", {"todo": todo, "outcome": "great", "summary": "x"}
        )
    return out


async def race(repo, agent_a, agent_b):
    """Two servers, one per agent, call next_todo with claim at once."""
    out = {}
    async with Client(params(repo, agent_a), mode="legacy") as a, Client(
        params(repo, agent_b), mode="legacy"
    ) as b:
        go = anyio.Event()

        async def one(name, client):
            await go.wait()
            out[name] = await call(client, "next_todo", {"claim": True})

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, agent_a, a)
            tg.start_soon(one, agent_b, b)
            await anyio.sleep(0.1)
            go.set()
    return out


async def notify(repo, todo):
    """Subscribe to loopx://status, then a CLI writeback: how long until the
    server says the resource changed."""
    out = {"updated": [], "list_changed": 0}
    seen = anyio.Event()

    async def on_message(message):
        method = getattr(message, "method", None)
        if method == "notifications/resources/updated":
            out["updated"].append(str(message.params.uri))
            seen.set()
        elif method == "notifications/resources/list_changed":
            out["list_changed"] += 1

    async with Client(params(repo), mode="legacy", message_handler=on_message) as c:
        await c.session.subscribe_resource("loopx://status")
        # Nothing moved yet: no notification.
        await anyio.sleep(0.8)
        out["before"] = list(out["updated"])
        done = cli_writeback(repo, todo)
        written = time.monotonic()
        out["cli_exit"] = done.returncode
        out["cli_stderr"] = done.stderr
        with anyio.move_on_after(30):
            await seen.wait()
        out["seconds"] = time.monotonic() - written if seen.is_set() else None
    return out


def cli_writeback(repo, todo):
    """A writeback by the command line, as another process of the agent."""
    cli = [os.environ["LOOPX_MCP_BIN"], "writeback", "--todo", todo]
    cli += ["--outcome", "outcome_progress", "--summary", "from the command line"]
    return subprocess.run(cli, cwd=repo, capture_output=True, text=True)


async def listen(repo, todo):
    """The 2026-07-28 revision, as the SDK's default client negotiates it:
    a tool call, then `subscriptions/listen` and a CLI writeback."""
    out = {"events": []}
    async with Client(params(repo)) as c:
        out["protocol"] = c.protocol_version
        out["should_run"] = await call(c, "should_run", {})
        async with c.listen(
            resource_subscriptions=["loopx://status"], resources_list_changed=True
        ) as sub:
            out["honored"] = sub.honored.model_dump(exclude_none=True, by_alias=True)
            done = cli_writeback(repo, todo)
            written = time.monotonic()
            out["cli_exit"] = done.returncode
            out["cli_stderr"] = done.stderr
            with anyio.move_on_after(30):
                async for event in sub:
                    out["events"].append(
                        {"type": type(event).__name__, "uri": getattr(event, "uri", None)}
                    )
                    out["seconds"] = time.monotonic() - written
                    break
    return out


async def registered(repo):
    """Start the server as Claude Code would, from the project's .mcp.json."""
    with open(os.path.join(repo, ".mcp.json")) as f:
        server = json.load(f)["mcpServers"]["loopx"]
    spawn = StdioServerParameters(
        command=server["command"], args=server["args"], env=dict(os.environ), cwd=repo
    )
    async with Client(spawn, mode="legacy") as c:
        return {"should_run": await call(c, "should_run", {})}


async def calls(repo, script):
    """The tool calls of a JSON list of [name, arguments], in order."""
    out = []
    async with Client(params(repo), mode="legacy") as c:
        for name, arguments in json.loads(script):
            out.append(await call(c, name, arguments))
    return {"calls": out}


async def shell(repo, script):
    """An agent program that has git loopx as its MCP server, and a shell
    tool of its own: while the session is open, it runs each command of a
    JSON list of argv lists as its shell would, from the repository, and
    reports how each ended."""
    import subprocess

    out = []
    async with Client(params(repo), mode="legacy") as c:
        first = await call(c, "should_run", {})
        for argv in json.loads(script):
            p = subprocess.run(argv, cwd=repo, capture_output=True, text=True)
            out.append({"argv": argv, "code": p.returncode, "stdout": p.stdout, "stderr": p.stderr})
    return {"should_run": first, "commands": out}


def main():
    scenario, repo, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    run = {
        "turn": turn,
        "refusal": refusal,
        "race": race,
        "notify": notify,
        "registered": registered,
        "listen": listen,
        "calls": calls,
        "shell": shell,
    }[scenario]
    print(json.dumps(anyio.run(run, repo, *rest)))


if __name__ == "__main__":
    main()
