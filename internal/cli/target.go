package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/apperr"
)

// resolveSandbox names the sandbox a command is about: the one given, or, when none is,
// the only sandbox made from the project the current directory is in.
func resolveSandbox(ctx context.Context, f *Factory, c *client.Client, name string) (string, error) {
	if name != "" {
		return name, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := git(ctx, wd, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", usagef("name a sandbox (the current directory is not in a git repository)")
	}
	list, err := c.List(ctx)
	if err != nil {
		return "", err
	}
	var matches []string
	for _, sb := range list {
		if sb.SourcePath == root {
			matches = append(matches, sb.Name)
		}
	}
	switch len(matches) {
	case 0:
		return "", apperr.NotFound("create one with `paddock up .`", "no sandbox was made from %s", root)
	case 1:
		return matches[0], nil
	}
	return f.choose(fmt.Sprintf("%s has several sandboxes: which one?", root), matches,
		func(choice string) string { return "paddock " + f.command + " " + choice })
}

// resolveTarget splits SANDBOX[/SESSION]; without a session, the sandbox's only session.
func resolveTarget(ctx context.Context, f *Factory, c *client.Client, arg string, needSession bool) (string, string, error) {
	sbName, sessName, _ := strings.Cut(arg, "/")
	sbName, err := resolveSandbox(ctx, f, c, sbName)
	if err != nil {
		return "", "", err
	}
	if !needSession {
		return sbName, sessName, nil
	}
	list, err := c.Sessions(ctx, sbName)
	if err != nil {
		return "", "", err
	}
	if sessName != "" {
		for _, s := range list {
			if s.Name == sessName {
				return sbName, sessName, nil
			}
		}
		return "", "", apperr.NotFound(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sbName),
			"sandbox %q has no session named %q", sbName, sessName)
	}
	switch len(list) {
	case 0:
		return "", "", apperr.NotFound(fmt.Sprintf("start one with `paddock chat %s --new NAME --agent claude`", sbName),
			"sandbox %q has no sessions", sbName)
	case 1:
		return sbName, list[0].Name, nil
	}
	var names []string
	for _, s := range list {
		names = append(names, sbName+"/"+s.Name)
	}
	choice, err := f.choose(fmt.Sprintf("sandbox %s has several sessions: which one?", sbName), names,
		func(choice string) string { return "paddock " + f.command + " " + choice })
	if err != nil {
		return "", "", err
	}
	_, sessName, _ = strings.Cut(choice, "/")
	return sbName, sessName, nil
}

// choose asks which of choices, on a terminal: the choices numbered, the first the
// default, a number or a name taken. With --non-interactive, or without a terminal, it
// fails at once (exit 2) with the command that names one (fix of the first choice).
func (f *Factory) choose(question string, choices []string, fix func(choice string) string) (string, error) {
	if f.NonInteractive || !isTerminal(f.IO.In) || !isTerminal(f.IO.ErrOut) {
		return "", usagef("%s (%s): name one, e.g. `%s`", strings.TrimSuffix(question, ": which one?"), strings.Join(choices, ", "), fix(choices[0]))
	}
	in := bufio.NewReader(f.IO.In)
	for try := 0; try < 3; try++ {
		fmt.Fprintln(f.IO.ErrOut, question)
		for i, c := range choices {
			fmt.Fprintf(f.IO.ErrOut, "  %d) %s\n", i+1, c)
		}
		fmt.Fprintf(f.IO.ErrOut, "choose [1]: ")
		line, err := in.ReadString('\n')
		line = strings.TrimSpace(line)
		if line == "" && err == nil {
			return choices[0], nil
		}
		if n, perr := strconv.Atoi(line); perr == nil && n >= 1 && n <= len(choices) {
			return choices[n-1], nil
		}
		for _, c := range choices {
			if line == c || strings.HasSuffix(c, "/"+line) {
				return c, nil
			}
		}
		if err != nil {
			break
		}
		fmt.Fprintf(f.IO.ErrOut, "%q is none of them\n", line)
	}
	return "", usagef("no choice made: name one, e.g. `%s`", fix(choices[0]))
}
