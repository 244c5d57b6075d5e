// Package codex describes the Codex CLI (npm @openai/codex).
package codex

import (
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/agents/codex/codexconf"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Agent) }

// Model is the model Codex asks for. Codex offers to move it to a newer model in a
// screen before its prompt; the config marks that offer as seen (notice.model_migrations).
const (
	Model         = "gpt-5.5"
	upgradeTarget = "gpt-6-sol"
)

// Agent is the Codex CLI. Codex ignores OPENAI_BASE_URL, so its provider is declared in
// $CODEX_HOME/config.toml, pointing at the credential proxy; its own sandbox is bypassed
// (paddock's is the sandbox).
var Agent = &agents.Agent{
	Name:      "codex",
	Binary:    "codex",
	Package:   "@openai/codex@0.169.0",
	NeedsNode: true,
	Install:   "npm install -g @openai/codex",
	Tested:    "yes, the same checks against a scripted OpenAI Responses server, and two sessions in one sandbox each resuming its own conversation",
	Hosts:     []string{"api.openai.com", "chatgpt.com"},
	Provider:  "openai",
	Login:     "codex",
	// ChatGPT's backend must be at an https origin: the proxy's port speaks TLS too.
	LoginEnv: []string{"CODEX_CA_CERTIFICATE=" + proxyCA},

	Command: []string{"codex"},
	New:     []string{"--dangerously-bypass-approvals-and-sandbox", "--no-daemon"},
	// The thread id Codex's notify program reported at the end of the first turn (`--last`
	// would take the newest of the whole sandbox, another session's when two run).
	Resume: []string{"resume", "{id}", "--dangerously-bypass-approvals-and-sandbox", "--no-daemon"},
	// No Ask: `codex exec resume` refuses a conversation the interactive session holds
	// ("already has an active writer"), so paddock types the message into the session and
	// reads the answer from the transcript instead.
	Env:    []string{"CODEX_HOME=" + inside.Home + "/.codex"},
	Files:  files,
	Memory: inside.Home + "/.codex/AGENTS.md",

	// Rollouts by date under $CODEX_HOME/sessions, named after their thread id.
	State:      []string{"{home}/.codex/sessions"},
	Transcript: rolloutGlob("{id}"),
	Parse:      transcript.ParseCodex,
	Status:     agents.Status{Idle: true, Source: "its notify program at the end of each turn (idle); working from the moment a prompt is sent"},
}

// proxyCA is where a session signed in with the daemon's ChatGPT login finds the CA of
// the credential proxy's certificate.
const proxyCA = inside.Home + "/.codex/paddock-proxy-ca.pem"

// rolloutGlob matches the rollout of one conversation: Codex names it after the thread.
func rolloutGlob(id string) string {
	return inside.Home + "/.codex/sessions/*/*/*/rollout-*-" + id + ".jsonl"
}

// files declare the provider, trust the working directory, skip the first-run screens
// and install the notify program. With the daemon's ChatGPT login, Codex signs in with
// an auth.json of placeholders and sends its calls to ChatGPT's backend through the
// credential proxy.
func files(s agents.Session) []agents.File {
	notify := []string{inside.GuestBinary, inside.GuestCommand, "notify", "--status", "idle", "--conversation-file", rolloutGlob("{id}")}
	if s.LoginFile != nil && s.ProxyCA != nil {
		backend := "https://" + strings.TrimPrefix(s.CredsBase, "http://") + "/chatgpt/backend-api/"
		return []agents.File{
			{Path: inside.Home + "/.codex/auth.json", Mode: 0o600, Content: s.LoginFile},
			{Path: proxyCA, Mode: 0o644, Content: s.ProxyCA},
			{Path: inside.Home + "/.codex/config.toml", Mode: 0o600,
				Content: []byte(codexconf.ChatGPT(Model, upgradeTarget, backend, s.Dir, notify))},
		}
	}
	return []agents.File{{Path: inside.Home + "/.codex/config.toml", Mode: 0o600,
		Content: []byte(codexconf.Config(Model, upgradeTarget, s.CredsBase+"/openai/v1", "OPENAI_API_KEY", s.Dir, notify))}}
}
