// git-loopx for Pi. Written by `git loopx hooks install --pi`;
// `git loopx hooks uninstall --pi` removes it. See hooks/pi/README.md.
//
// - The bash tool runs with the agent's identity (LOOPX_AGENT), the goal
//   installed for (LOOPX_GOAL) and the installed marker (LOOPX_RUNTIME) in
//   its environment.
// - before_agent_start: `git loopx hook pi session-start` once, its context
//   added to the system prompt (on every prompt: Pi resets it otherwise).
// - turn_end with no tool call: `git loopx hook pi stop` decides; while it
//   answers {"decision":"block","reason":R}, R is queued as a follow-up.
//   Synchronously: print mode (`pi -p`) ends as soon as the agent's loop
//   finds no follow-up queued.
// - /loopx: start or continue the goal.

import { execFileSync } from "node:child_process";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { createBashTool } from "@mariozechner/pi-coding-agent";

const AGENT = "{{AGENT}}";
const GOAL = "{{GOAL}}";
const RUNTIME = "{{RUNTIME}}";

function hook(event: string, payload: object, cwd: string): any {
  const args = ["loopx", "hook", RUNTIME, event];
  if (AGENT) args.push("--agent", AGENT);
  if (GOAL) args.push("--goal", GOAL);
  try {
    const out = execFileSync("git", args, { cwd, input: JSON.stringify(payload), encoding: "utf8", stdio: ["pipe", "pipe", "inherit"] }).trim();
    return out ? JSON.parse(out) : null;
  } catch {
    return null;
  }
}

export default function (pi: ExtensionAPI) {
  let context: string | undefined;
  let active = false;
  const session = (ctx: any) => ctx.sessionManager.getSessionId();

  pi.on("before_agent_start", async (event: any, ctx: any) => {
    if (context === undefined) {
      const answer = hook("session-start", { session_id: session(ctx), cwd: ctx.cwd, hook_event_name: "SessionStart" }, ctx.cwd);
      context = answer?.hookSpecificOutput?.additionalContext || "";
    }
    if (context) return { systemPrompt: event.systemPrompt + "\n\n" + context };
  });

  pi.on("turn_end", async (event: any, ctx: any) => {
    const calls = (event.message?.content || []).some((c: any) => c.type === "toolCall");
    if (calls) return;
    const answer = hook("stop", { session_id: session(ctx), cwd: ctx.cwd, hook_event_name: "Stop", stop_hook_active: active }, ctx.cwd);
    if (answer?.decision === "block" && answer.reason) {
      active = true;
      pi.sendUserMessage(answer.reason, { deliverAs: "followUp" });
    } else {
      active = false;
    }
  });

  const bash = createBashTool(process.cwd(), {
    spawnHook: ({ command, cwd, env }: any) => ({
      command,
      cwd,
      env: { ...env, LOOPX_RUNTIME: RUNTIME, ...(AGENT ? { LOOPX_AGENT: AGENT } : {}), ...(GOAL ? { LOOPX_GOAL: GOAL } : {}) },
    }),
  });
  pi.registerTool({ ...bash, execute: (id: any, params: any, signal: any, onUpdate: any) => bash.execute(id, params, signal, onUpdate) });

  pi.registerCommand("loopx", {
    description: "Work on this repository's git-loopx goal, one governed turn at a time",
    handler: async (args: string) => {
      pi.sendUserMessage(
        "Work on this repository's git-loopx goal under its turn protocol. " +
          "Run `git loopx status`; with no state and an objective (" + (args || "none given") + "), " +
          "run `git loopx init --objective \"<objective>\"`. Then run `git loopx prompt --runtime " + RUNTIME + "` " +
          "and do the turn it describes. Gates are the person's: never answer one.",
      );
    },
  });
}
