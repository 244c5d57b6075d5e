// Package shell quotes words for a POSIX shell.
package shell

import "strings"

// Quote makes s one word for sh, whatever it holds: in single quotes, each ' in it
// written as '\”.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Word is s as one word for sh, bare when nothing in it needs quoting: for a command
// line a person reads and pastes.
func Word(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=") == "" {
		return s
	}
	return Quote(s)
}

// Join quotes each word of argv and joins them with spaces: a command line for sh -c.
func Join(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
