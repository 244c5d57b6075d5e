package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/apperr"
)

// resolveSandbox names the sandbox a command is about: the one given, or, when none is,
// the only sandbox made from the project the current directory is in.
func resolveSandbox(ctx context.Context, c *api.Client, name string) (string, error) {
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
	return "", usagef("%s has several sandboxes (%s): name one", root, strings.Join(matches, ", "))
}

// resolveTarget splits SANDBOX[/SESSION]; without a session, the sandbox's only session.
func resolveTarget(ctx context.Context, c *api.Client, arg string, needSession bool) (string, string, error) {
	sbName, sessName, _ := strings.Cut(arg, "/")
	sbName, err := resolveSandbox(ctx, c, sbName)
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
	return "", "", usagef("sandbox %s has several sessions: name one of %s", sbName, strings.Join(names, ", "))
}
