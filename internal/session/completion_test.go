package session

import "testing"

// TestCloseCompletion: a message whose last word Codex would complete (@ a file, $ a
// skill) is typed with a space after it, so that the Enter submits it; others as they are.
func TestCloseCompletion(t *testing.T) {
	for text, want := range map[string]string{
		"look at @check.sh":                "look at @check.sh ",
		"git commit -m \"greeting of $b\"": "git commit -m \"greeting of $b\" ",
		"line one\n$HOME":                  "line one\n$HOME ",
		"@main.go":                         "@main.go ",
		"costs $5 today":                   "costs $5 today",
		"mail me@example.com":              "mail me@example.com",
		"plain":                            "plain",
		"":                                 "",
	} {
		if got := closeCompletion(text); got != want {
			t.Errorf("closeCompletion(%q) = %q, want %q", text, got, want)
		}
	}
}
