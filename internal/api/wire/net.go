package wire

import "time"

// NetRuleRequest is the body of POST /v1/net/rules.
type NetRuleRequest struct {
	// Sandbox scopes the rule to one sandbox; empty means every sandbox.
	Sandbox string `json:"sandbox,omitempty"`
	Pattern string `json:"pattern"`
	Action  string `json:"action"`
}

// NetLearnRequest is the body of POST /v1/net/learning.
type NetLearnRequest struct {
	Sandbox string `json:"sandbox"`
	// For is how long to learn, as a Go duration ("30m", "2h"); empty means an hour.
	For string `json:"for,omitempty"`
	// Stop ends learning now instead.
	Stop bool `json:"stop,omitempty"`
}

// NetProposalRequest is the body of POST /v1/net/proposal, which applies a proposal.
type NetProposalRequest struct {
	Sandbox string `json:"sandbox"`
	// Prune removes the sandbox's own allow rules that allowed nothing while learning.
	Prune bool `json:"prune,omitempty"`
}

// NetRule is an egress rule as the user sees it.
type NetRule struct {
	Pattern string `json:"pattern"`
	Action  string `json:"action"`
	// Scope is "default", "global", or the sandbox's name.
	Scope string `json:"scope"`
}

// Denial is a refused egress request as the user sees it: identical requests refused
// within a minute of the first are one denial with a count.
type Denial struct {
	ID int64 `json:"id"`
	// Time is when the first was refused, LastSeen when the last was (UTC, RFC 3339).
	Time     string `json:"time"`
	LastSeen string `json:"last_seen"`
	Sandbox  string `json:"sandbox"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Reason   string `json:"reason"`
	// Count is how many requests were refused.
	Count int `json:"count"`
}

// Learning is a sandbox's learn mode as the user sees it.
type Learning struct {
	Sandbox string `json:"sandbox"`
	// Active says it is learning now; Since and Until bound the window (UTC, RFC 3339).
	Active bool   `json:"active"`
	Since  string `json:"since"`
	Until  string `json:"until"`
	// Destinations is how many distinct hosts and ports were recorded, Requests how many
	// requests to them; Dropped how many requests went to destinations past the 1,000 kept.
	Destinations int `json:"destinations"`
	Requests     int `json:"requests"`
	Dropped      int `json:"dropped,omitempty"`
}

// Proposal is the smallest allowlist that would have allowed what a sandbox used while
// it learned, as a diff against its rules today.
type Proposal struct {
	Learning Learning `json:"learning"`
	// Lines are today's rules (Op " "), each with what it allowed or refused, then the
	// rules to add (Op "+") and, when pruning, the sandbox's own allow rules never used
	// (Op "-").
	Lines []ProposalLine `json:"lines"`
	// Learned are the destinations the sandbox reached for, by host and port.
	Learned []LearnedDest `json:"learned"`
	// Refused are destinations a deny rule refused: a proposal never overrides one.
	Refused []LearnedDest `json:"refused,omitempty"`
	// Suspect are destinations whose host name reads as data carried out (an alarm's
	// finding): a proposal never allows one.
	Suspect []LearnedDest `json:"suspect,omitempty"`
	// Applied says the additions (and removals) were made.
	Applied bool `json:"applied,omitempty"`
}

// ProposalLine is one rule of a proposal.
type ProposalLine struct {
	// Op is "+" for a rule to add, "-" for one to remove, " " for one kept.
	Op      string `json:"op"`
	Action  string `json:"action"`
	Pattern string `json:"pattern"`
	// Scope is "default", "global" or the sandbox's name.
	Scope string `json:"scope"`
	// Requests is how many requests the rule decided while learning (for a rule to add:
	// how many were refused for want of it); Hosts the destinations those went to.
	Requests int      `json:"requests"`
	Hosts    []string `json:"hosts,omitempty"`
}

// LearnedDest is a destination a learning sandbox reached for.
type LearnedDest struct {
	Host     string   `json:"host"`
	Port     int      `json:"port"`
	Requests int      `json:"requests"`
	Refused  int      `json:"refused"`
	Reason   string   `json:"reason,omitempty"`
	Methods  []string `json:"methods,omitempty"`
	Paths    []string `json:"paths,omitempty"`
	First    string   `json:"first_seen"`
	Last     string   `json:"last_seen"`
}

// DefaultLearnFor is how long learn mode lasts when not told.
const DefaultLearnFor = time.Hour
