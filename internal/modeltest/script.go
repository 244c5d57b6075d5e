package modeltest

import "strings"

// Replies of the script, exported so tests can assert them.
const (
	// SideReply answers requests that offer no tools (title generation,
	// topic detection and other side calls).
	SideReply = "Session title"
	// WriteContent is what a "WRITE: <path>" prompt makes the agent write.
	WriteContent = "written by modeltest\n"
	// maxEcho is how many characters of a text ECHO and DONE repeat.
	maxEcho = 200
)

// callKind says which tool, if any, the script wants called.
type callKind int

const (
	callNone  callKind = iota
	callRun            // run a shell command
	callWrite          // write a file
)

// turn is the script's answer, before it is put on a wire.
type turn struct {
	// text is the answer text, or the short text before a tool call.
	text string
	// call is the tool call wanted, callNone for a plain answer.
	call callKind
	// arg is the command to run or the path to write.
	arg string
}

// lastTurn returns the last user or assistant message. Claude Code 2.1.330
// was seen putting a role "system" message (its environment description)
// after the user's prompt; such messages are not turns and are skipped.
func lastTurn(msgs []Message) Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" || msgs[i].Role == "assistant" {
			return msgs[i]
		}
	}
	return Message{Role: "user"}
}

// decide applies the script to the last message of a request. It never asks
// for a tool call when the last message is a tool result, so a command whose
// output holds "RUN:" cannot loop.
func decide(last Message) turn {
	if len(last.ToolResults) > 0 {
		return turn{text: "DONE: " + truncate(last.ToolResults[len(last.ToolResults)-1], maxEcho)}
	}
	if last.Role == "user" {
		text := userText(last.Text)
		if cmd, ok := directive(text, "RUN: "); ok {
			return turn{text: "Running the command.", call: callRun, arg: cmd}
		}
		if path, ok := directive(text, "WRITE: "); ok {
			return turn{text: "Writing the file.", call: callWrite, arg: path}
		}
	}
	return echo(last)
}

// echo is the plain answer to a message.
func echo(last Message) turn {
	return turn{text: "ECHO: " + truncate(userText(last.Text), maxEcho)}
}

// userText is text without the <system-reminder> sections that Claude Code
// adds to the user's turns, so that ECHO repeats what the user typed.
func userText(text string) string {
	var b strings.Builder
	for {
		start := strings.Index(text, "<system-reminder>")
		if start < 0 {
			break
		}
		end := strings.Index(text[start:], "</system-reminder>")
		if end < 0 {
			break
		}
		b.WriteString(text[:start])
		text = text[start+end+len("</system-reminder>"):]
	}
	b.WriteString(text)
	return strings.TrimSpace(b.String())
}

// directive finds a line holding prefix and returns the rest of that line.
func directive(text, prefix string) (string, bool) {
	for line := range strings.Lines(text) {
		if _, rest, ok := strings.Cut(line, prefix); ok {
			if rest = strings.TrimSpace(rest); rest != "" {
				return rest, true
			}
		}
	}
	return "", false
}

// truncate keeps the first n characters of s.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// tokens is the script's deterministic token count for a text: one token per
// four bytes, at least one.
func tokens(s string) int64 {
	return int64(len(s)/4 + 1)
}
