package gitsync

// DiffArgs are the arguments of the host git diff `paddock diff` runs of a sandbox's
// work (its WIP ref) against base: no external diff, no textconv, no colour (so no byte
// of the output is git's own escape), stat for a summary. Paths follow.
func DiffArgs(sandbox, base string, stat bool) []string {
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color"}
	if stat {
		args = append(args, "--stat")
	}
	return append(args, base, Namespace(sandbox)+WIPBranch, "--")
}
