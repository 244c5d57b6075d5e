// Package codexconf writes the Codex CLI's config.toml: one place for the provider,
// trust and first-run settings that both paddock's sandboxes and its tests give Codex.
package codexconf

import (
	"strconv"
	"strings"
)

// Config is a $CODEX_HOME/config.toml that asks for model (and marks Codex's offer to
// move it to upgradeTarget as seen), sends Codex's model calls to baseURL (a
// Responses API endpoint, ending in /v1) with the key from the variable envKey and the
// session's name from PADDOCK_SESSION (for the credential proxy's metering), trusts
// dir, never asks for approval, runs notify (when given) at the end of each turn, and
// turns off what was seen reaching outside or stopping at a screen before the prompt
// (update check, analytics, plugins and apps look up api.github.com, chatgpt.com and
// ab.chatgpt.com otherwise).
func Config(model, upgradeTarget, baseURL, envKey, dir string, notify []string) string {
	return config(model, upgradeTarget, dir, notify, "", `base_url = `+strconv.Quote(baseURL)+`
wire_api = "responses"
env_key = `+strconv.Quote(envKey))
}

// ChatGPT is the config.toml of Codex signed in with a ChatGPT login (an auth.json in
// $CODEX_HOME): its model calls go to backendURL+"codex" (ChatGPT's backend, through
// the credential proxy, which puts the real login on them), and so do its account
// look-ups (chatgpt_base_url = backendURL, ending in "/backend-api/"). The rest is as
// in Config.
func ChatGPT(model, upgradeTarget, backendURL, dir string, notify []string) string {
	return config(model, upgradeTarget, dir, notify, `chatgpt_base_url = `+strconv.Quote(backendURL)+"\n"+`forced_login_method = "chatgpt"`+"\n",
		`base_url = `+strconv.Quote(backendURL+"codex")+`
wire_api = "responses"
requires_openai_auth = true`)
}

func config(model, upgradeTarget, dir string, notify []string, top, provider string) string {
	var b strings.Builder
	b.WriteString(`model = ` + strconv.Quote(model) + `
model_provider = "paddock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
` + top)
	if notify != nil {
		quoted := make([]string, len(notify))
		for i, arg := range notify {
			quoted[i] = strconv.Quote(arg)
		}
		b.WriteString("notify = [" + strings.Join(quoted, ", ") + "]\n")
	}
	b.WriteString(`
[model_providers.paddock]
name = "paddock"
` + provider + `
env_http_headers = { "X-Paddock-Session" = "PADDOCK_SESSION" }

[projects.` + strconv.Quote(dir) + `]
trust_level = "trusted"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false

[notice]
hide_full_access_warning = true
hide_world_writable_warning = true
hide_rate_limit_model_nudge = true
model_migrations = { ` + strconv.Quote(model) + ` = ` + strconv.Quote(upgradeTarget) + ` }

[tui]
screen_reader_detection_done = true
`)
	return b.String()
}
