// aipm's hooks for OpenCode, written by aipm: each event runs aipm's hook
// command (as Claude Code runs it, its JSON on stdin) and applies its
// answer. A denied tool call throws, and OpenCode hands the model the
// reason; added context goes into the tool's output or the system prompt.
import { spawnSync } from "node:child_process"

const command = AIPM_HOOK_COMMAND
const timeout = AIPM_HOOK_TIMEOUT

function hook(directory, event, sessionID, fields) {
  const input = JSON.stringify({ hook_event_name: event, session_id: sessionID, cwd: directory, ...fields })
  const run = spawnSync("/bin/sh", ["-c", command], { input, encoding: "utf8", timeout, cwd: directory })
  if (run.error) {
    console.error(`aipm hook did not run at ${event}: ${run.error.message}`)
    return {}
  }
  if (run.status === 2) return { deny: (run.stderr || "").trim() || "aipm's hook refused this tool call" }
  if (run.status !== 0) {
    console.error(`aipm hook failed at ${event} (exit ${run.status}): ${(run.stderr || "").trim()}`)
    return {}
  }
  try {
    return JSON.parse(run.stdout || "{}") || {}
  } catch {
    console.error(`aipm hook answered ${event} with what is not JSON: ${run.stdout.slice(0, 200)}`)
    return {}
  }
}

function denial(answer) {
  const specific = answer.hookSpecificOutput || {}
  if (specific.permissionDecision === "deny") return specific.permissionDecisionReason || "denied by aipm"
  if (answer.decision === "block" || answer.decision === "deny") return answer.reason || "denied by aipm"
  return answer.deny
}

function context(answer) {
  return (answer.hookSpecificOutput || {}).additionalContext || ""
}

export const AipmHooks = async ({ directory }) => {
  // sessionID → what aipm's hooks said at its start and at its latest
  // message, for its system prompt (a message's replaces the one before).
  const told = new Map()
  return {
    "chat.message": async (input) => {
      let said = told.get(input.sessionID)
      if (!said) {
        said = { start: context(hook(directory, "SessionStart", input.sessionID, { source: "startup" })), prompt: "" }
        told.set(input.sessionID, said)
      }
      said.prompt = context(hook(directory, "UserPromptSubmit", input.sessionID, {}))
    },
    "experimental.chat.system.transform": async (input, output) => {
      const said = told.get(input.sessionID)
      for (const text of [said?.start, said?.prompt]) if (text) output.system.push(text)
    },
    "tool.execute.before": async (input, output) => {
      const answer = hook(directory, "PreToolUse", input.sessionID, {
        tool_name: input.tool, tool_use_id: input.callID, tool_input: output.args,
      })
      const reason = denial(answer)
      if (reason) throw new Error(reason)
    },
    "tool.execute.after": async (input, output) => {
      const text = context(hook(directory, "PostToolUse", input.sessionID, {
        tool_name: input.tool, tool_use_id: input.callID, tool_input: input.args,
      }))
      if (text) output.output = `${output.output ?? ""}\n\n${text}`
    },
  }
}
