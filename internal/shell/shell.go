// Package shell quotes words for a POSIX shell.
package shell

import "strings"

// Quote makes s one word for sh, whatever it holds: in single quotes, each ' in it
// written as '\”.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Join quotes each word of argv and joins them with spaces: a command line for sh -c.
func Join(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
