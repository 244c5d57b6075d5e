package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
)

// checkAgentFlags refuses an unknown --agent, and a --prompt with no agent to take it,
// before anything is asked of the daemon or printed as starting.
func checkAgentFlags(opts *upOptions) error {
	for _, name := range opts.agents {
		if _, err := agents.Get(name); err != nil {
			return usagef("--agent: %v", err)
		}
	}
	if strings.TrimSpace(opts.prompt) == "" {
		if opts.prompt != "" {
			return usagef("--prompt is empty: give the agent's first message, or leave --prompt out")
		}
		return nil
	}
	if len(opts.agents) == 0 {
		return usagef("--prompt is the first message of an agent's session: add --agent (%s)", strings.Join(agentChoices(), ", "))
	}
	if opts.agents[0] == "shell" {
		return usagef("--prompt is for an agent, not the plain shell: name one with --agent (%s), or type into the shell with `paddock chat`", strings.Join(agentChoices(), ", "))
	}
	return nil
}

// agentChoices are the agents a session can take a first prompt in.
func agentChoices() []string {
	var out []string
	for _, n := range agents.Names() {
		if n != "shell" {
			out = append(out, n)
		}
	}
	return out
}

// startExisting starts a sandbox again and, with --agent, a new session of the first
// agent in it.
func startExisting(ctx context.Context, f *Factory, c *client.Client, opts *upOptions, name string) error {
	if len(opts.agents) > 0 {
		if err := ensureKey(ctx, f, c, opts.agents[0]); err != nil {
			return err
		}
	}
	info, err := c.Start(ctx, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s is %s\n", info.Name, info.State)
	if len(opts.agents) > 0 {
		if err := firstSession(ctx, f, c, opts, info); err != nil {
			return err
		}
	}
	fmt.Fprintln(f.IO.Out, info.Name)
	return nil
}

// firstSession starts a session of the first agent, ready at its prompt (at work on
// --prompt, when given), or says how to get a shell when no agent was asked for. In a
// sandbox that has sessions, it is named after the agent with the first free number.
func firstSession(ctx context.Context, f *Factory, c *client.Client, opts *upOptions, info wire.SandboxInfo) error {
	if len(opts.agents) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "next: paddock shell %s\n", info.Name)
		return nil
	}
	agent := opts.agents[0]
	name, err := freeSessionName(ctx, c, info.Name, agent)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: starting %s in %s/%s\n", agent, info.Name, name)
	s, err := c.CreateSession(ctx, info.Name, wire.SessionCreateRequest{Name: name, Agent: agent, Prompt: opts.prompt}, 60*time.Second)
	if err != nil {
		return fmt.Errorf("the sandbox is up, but its session is not: %w", err)
	}
	if opts.prompt != "" {
		fmt.Fprintf(f.IO.ErrOut, "paddock: session %s/%s has its first prompt and is %s\nnext: paddock chat %s/%s\n", info.Name, s.Name, s.Status, info.Name, s.Name)
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: session %s/%s is %s\nnext: paddock chat %s/%s\n", info.Name, s.Name, s.Status, info.Name, s.Name)
	return nil
}

// freeSessionName is agent, or agent-2, agent-3... when the sandbox has a session of
// that name.
func freeSessionName(ctx context.Context, c *client.Client, sb, agent string) (string, error) {
	list, err := c.Sessions(ctx, sb)
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, s := range list {
		taken[s.Name] = true
	}
	name := agent
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-%d", agent, i)
	}
	return name, nil
}
