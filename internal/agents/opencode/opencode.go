// Package opencode describes OpenCode (npm opencode-ai), pointed at an OpenAI-compatible
// endpoint: the credential proxy's OpenAI route, spoken to with the Responses API.
package opencode

import (
	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Agent) }

const (
	// Version is the OpenCode release paddock's image installs and its tests run.
	Version = "1.18.33"
	// Model is the model OpenCode asks the OpenAI-compatible endpoint for.
	Model = "gpt-5.5"
	// config is OpenCode's own directory of settings, rules and plugins.
	config = inside.Home + "/.config/opencode"
)

// Agent is OpenCode. Its conversation ids are its own (ses_...): the plugin paddock
// installs reports the id when a conversation starts, and a restart resumes it (-s ID).
// It keeps conversations in SQLite, so its transcript is what `opencode export` prints.
var Agent = &agents.Agent{
	Name:    "opencode",
	Binary:  "opencode",
	Package: "opencode-ai@" + Version,
	Install: "npm install -g opencode-ai",
	Tested:  "yes, the same checks against a scripted OpenAI Responses server (an OpenAI-compatible endpoint)",
	Hosts:   []string{"api.openai.com", "api.anthropic.com", "openrouter.ai"},

	Command: []string{"opencode"},
	Resume:  []string{"-s", "{id}"},
	// The message goes on stdin: OpenCode quotes an argument holding spaces, and reads
	// one starting with "-" as a flag.
	Env: []string{
		// No model list from models.dev, no update check or self-upgrade, and none of
		// Claude Code's files read as its own.
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
	},
	Files:  files,
	Memory: config + "/AGENTS.md",

	State:             []string{"{home}/.local/share/opencode"},
	TranscriptCommand: []string{"opencode", "export", "{id}"},
	Parse:             transcript.ParseOpenCode,
	Status: agents.Status{Ready: true, Idle: true,
		Source: "its plugin events (paddock's plugin): session.status, session.idle, permission.asked, question.asked"},
}

// files point OpenCode at the credential proxy with every permission on and nothing
// fetched at start, install the plugin that reports status, and mark the plugin API
// package as installed (OpenCode would otherwise npm-install it into its config
// directory at every start; paddock's plugin needs none of it).
func files(s agents.Session) []agents.File {
	return []agents.File{
		{Path: config + "/opencode.json", Mode: 0o600, Merge: map[string]any{
			"$schema":     "https://opencode.ai/config.json",
			"model":       "openai/" + Model,
			"small_model": "openai/" + Model,
			"autoupdate":  false,
			"share":       "disabled",
			"permission":  "allow",
			"provider": map[string]any{"openai": map[string]any{
				"options": map[string]any{"baseURL": s.CredsBase + "/openai/v1", "apiKey": "{env:OPENAI_API_KEY}"},
				"models":  map[string]any{Model: map[string]any{"name": Model}},
			}},
		}},
		{Path: config + "/plugin/paddock.js", Mode: 0o644, Content: []byte(plugin)},
		{Path: config + "/package.json", Mode: 0o644, Merge: map[string]any{
			"dependencies": map[string]any{"@opencode-ai/plugin": Version}}},
		{Path: config + "/package-lock.json", Mode: 0o644, Content: []byte(`{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"` + Version + `"}}}}` + "\n")},
		{Path: config + "/node_modules/.paddock", Mode: 0o644, Content: []byte("OpenCode's plugin packages: paddock's plugin needs none\n")},
	}
}

// plugin reports the status of the OpenCode it runs in: idle once loaded (at its
// prompt), working while a turn runs, waiting when it asks the user, idle after the
// turn; the conversation's id when one starts. Sessions a conversation starts for its
// subagents are not the user's and say nothing. It reports only inside a paddock session
// (PADDOCK_SESSION), and only changes.
const plugin = `// paddock: reports this OpenCode's status to paddock. Written by paddock at each start.
import { spawnSync } from "node:child_process";

const children = new Set();
let last = "";

function report(status, id) {
  if (!process.env.PADDOCK_SESSION || (status === last && !id)) return;
  last = status;
  const args = ["` + inside.GuestCommand + `", "notify", "--status", status];
  if (id) args.push(JSON.stringify({ session_id: id }));
  spawnSync("` + inside.GuestBinary + `", args, { stdio: "ignore", timeout: 5000 });
}

export const PaddockStatus = async () => {
  report("idle");
  return {
    event: async ({ event }) => {
      const p = event.properties || {};
      const id = p.sessionID || p.info?.id;
      if (event.type === "session.created" && p.info?.parentID) children.add(p.info.id);
      if (id && children.has(id)) return;
      switch (event.type) {
        case "session.created":
          report("working", p.info?.id);
          break;
        case "session.status":
          report(p.status?.type === "idle" ? "idle" : "working");
          break;
        case "session.idle":
          report("idle");
          break;
        case "permission.asked":
        case "question.asked":
          report("waiting");
          break;
      }
    },
  };
};
`
