package modeltest

import (
	"strings"
	"sync"
)

// rules are a server's answers given by the test for user texts holding a marker
// (RunOn, ReplyOn): a message the test does not write itself, such as one paddock sends
// an agent, can then make the agent act, or answer as the test needs.
type rules struct {
	mu   sync.Mutex
	list []rule
}

// rule is one RunOn or ReplyOn: a user text holding marker gets answer.
type rule struct {
	marker string
	answer turn
}

// add records a rule; the first added wins when several match.
func (r *rules) add(marker string, answer turn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rule{marker, answer})
}

// decide is the script's decide with the rules first: a user text (not a tool result)
// holding a rule's marker, outside <system-reminder> sections, gets the rule's answer.
func (r *rules) decide(last Message) turn {
	if last.Role == "user" && len(last.ToolResults) == 0 {
		text := userText(last.Text)
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rule := range r.list {
			if strings.Contains(text, rule.marker) {
				return rule.answer
			}
		}
	}
	return decide(last)
}

// RunOn makes the server answer a user text holding marker by calling the agent's
// shell tool with command, as a "RUN: command" line would; the command's result is
// then answered DONE as usual. Rules are tried in the order added, before the script.
func (s *Anthropic) RunOn(marker, command string) {
	s.rules.add(marker, turn{text: "Running the command.", call: callRun, arg: command})
}

// ReplyOn makes the server answer a user text holding marker with text, the model's
// whole answer (no tool call). Rules are tried in the order added, before the script.
func (s *Anthropic) ReplyOn(marker, text string) { s.rules.add(marker, turn{text: text}) }

// RunOn makes the server answer a user text holding marker by calling the agent's
// shell tool with command, as a "RUN: command" line would; the command's result is
// then answered DONE as usual. Rules are tried in the order added, before the script.
func (s *OpenAIResponses) RunOn(marker, command string) {
	s.rules.add(marker, turn{text: "Running the command.", call: callRun, arg: command})
}

// ReplyOn makes the server answer a user text holding marker with text, the model's
// whole answer (no tool call). Rules are tried in the order added, before the script.
func (s *OpenAIResponses) ReplyOn(marker, text string) { s.rules.add(marker, turn{text: text}) }
