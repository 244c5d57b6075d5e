package modeltest

import (
	"strings"
	"sync"
)

// rules are a server's answers given by the test for user texts holding a marker
// (RunOn): a message the test does not write itself, such as one paddock sends an
// agent, can then make the agent act.
type rules struct {
	mu   sync.Mutex
	runs []runRule
}

// runRule is one RunOn: a user text holding marker runs command.
type runRule struct{ marker, command string }

// add records a rule; the first added wins when several match.
func (r *rules) add(marker, command string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, runRule{marker, command})
}

// decide is the script's decide with the rules first: a user text (not a tool result)
// holding a rule's marker, outside <system-reminder> sections, calls the shell tool with
// the rule's command.
func (r *rules) decide(last Message) turn {
	if last.Role == "user" && len(last.ToolResults) == 0 {
		text := userText(last.Text)
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rule := range r.runs {
			if strings.Contains(text, rule.marker) {
				return turn{text: "Running the command.", call: callRun, arg: rule.command}
			}
		}
	}
	return decide(last)
}

// RunOn makes the server answer a user text holding marker by calling the agent's
// shell tool with command, as a "RUN: command" line would; the command's result is
// then answered DONE as usual. Rules are tried in the order added, before the script.
func (s *Anthropic) RunOn(marker, command string) { s.rules.add(marker, command) }

// RunOn makes the server answer a user text holding marker by calling the agent's
// shell tool with command, as a "RUN: command" line would; the command's result is
// then answered DONE as usual. Rules are tried in the order added, before the script.
func (s *OpenAIResponses) RunOn(marker, command string) { s.rules.add(marker, command) }
