package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// verbAliases are the other names people type for paddock's short verbs, as docker
// takes `docker container list` for `ls`.
var verbAliases = map[string][]string{"ls": {"list"}, "rm": {"remove"}}

// settleGroups walks the command tree below root. A command that only groups others
// (`key`, `net`, `snapshot`) and is given a word none of them has says so and exits 2,
// naming the nearest verb, instead of printing its help and exiting 0; with no word, it
// prints its help. Every ls and rm also answers to list and remove.
func settleGroups(root *cobra.Command) {
	for _, c := range root.Commands() {
		if aliases, ok := verbAliases[c.Name()]; ok {
			for _, a := range aliases {
				if !slices.Contains(c.Aliases, a) && !hasCommand(root, a) {
					c.Aliases = append(c.Aliases, a)
				}
			}
		}
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = unknownSubcommand
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		settleGroups(c)
	}
}

// hasCommand reports whether one of parent's commands is called name.
func hasCommand(parent *cobra.Command, name string) bool {
	for _, c := range parent.Commands() {
		if c.Name() == name || slices.Contains(c.Aliases, name) {
			return true
		}
	}
	return false
}

// unknownSubcommand refuses a word that names none of a group's commands.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
	}
	var verbs []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			verbs = append(verbs, sub.Name())
		}
	}
	return usagef("%s has no command %q%s (its commands: %s; see 'paddock %s --help')",
		cmd.CommandPath(), args[0], hint, strings.Join(verbs, ", "), strings.TrimPrefix(cmd.CommandPath(), "paddock "))
}
