// git-loopx for OpenCode. Written by `git loopx hooks install --opencode`;
// `git loopx hooks uninstall --opencode` removes it. See hooks/opencode/README.md.
//
// - shell.env: every command the agent runs acts as the agent (LOOPX_AGENT),
//   on the goal installed for (LOOPX_GOAL), and is marked as run inside
//   OpenCode (LOOPX_RUNTIME).
// - experimental.chat.system.transform: the session's first request asks
//   `git loopx hook opencode session-start` once and adds its context.
// - When an agent reply ends (an assistant message with a final finish
//   reason), `git loopx hook opencode stop` decides; while it answers
//   {"decision":"block","reason":R}, R is sent as the next user message.
//   The hook runs synchronously: `opencode run` leaves at the first idle,
//   so the next message must arrive before the session goes idle.

const AGENT = "{{AGENT}}";
const GOAL = "{{GOAL}}";
const RUNTIME = "{{RUNTIME}}";

function hook(event, payload, cwd) {
  const args = ["git", "loopx", "hook", RUNTIME, event];
  if (AGENT) args.push("--agent", AGENT);
  if (GOAL) args.push("--goal", GOAL);
  const run = Bun.spawnSync(args, {
    cwd,
    stdin: new TextEncoder().encode(JSON.stringify(payload)),
    stdout: "pipe",
    stderr: "pipe",
  });
  const err = run.stderr.toString().trim();
  if (err) console.error(err);
  const out = run.stdout.toString().trim();
  if (!out) return null;
  try {
    return JSON.parse(out);
  } catch {
    return null;
  }
}

export const LoopxPlugin = async ({ client, directory }) => {
  const context = new Map();
  const children = new Set();
  const active = new Map();
  const seen = new Set();
  return {
    "shell.env": async (_input, output) => {
      output.env.LOOPX_RUNTIME = RUNTIME;
      if (AGENT) output.env.LOOPX_AGENT = AGENT;
      if (GOAL) output.env.LOOPX_GOAL = GOAL;
    },
    "experimental.chat.system.transform": async (input, output) => {
      const id = input.sessionID;
      if (!id || children.has(id)) return;
      if (!context.has(id)) {
        const answer = hook("session-start", { session_id: id, cwd: directory, hook_event_name: "SessionStart" }, directory);
        context.set(id, answer?.hookSpecificOutput?.additionalContext || "");
      }
      const text = context.get(id);
      if (text) output.system.push(text);
    },
    event: async ({ event }) => {
      if (event.type === "session.created" && event.properties.info.parentID) {
        children.add(event.properties.info.id);
        return;
      }
      if (event.type !== "message.updated") return;
      const info = event.properties.info;
      if (info.role !== "assistant" || !info.finish || ["tool-calls", "unknown"].includes(info.finish)) return;
      if (info.time?.completed || seen.has(info.id) || children.has(info.sessionID)) return;
      seen.add(info.id);
      const id = info.sessionID;
      const answer = hook("stop", { session_id: id, cwd: directory, hook_event_name: "Stop", stop_hook_active: !!active.get(id) }, directory);
      if (answer?.decision === "block" && answer.reason) {
        active.set(id, true);
        client.session.promptAsync({ path: { id }, body: { parts: [{ type: "text", text: answer.reason }] } });
      } else {
        active.set(id, false);
      }
    },
  };
};
