package transcript

import (
	"encoding/json"
	"strings"
)

// InputText is a tool call's input as a person reads it: free-form input (a Codex
// patch) as its text, and JSON input as written, but with the escapes Go's encoder
// puts in for HTML (\u003c, \u003e, \u0026) turned back into <, > and &. Every hop
// through encoding/json (the daemon's answer, a Codex input made JSON) adds them,
// and a shell command reads "cd /x \u0026\u0026 make 2\u003e\u00261" with them.
func (e Entry) InputText() string {
	raw := strings.TrimSpace(string(e.Input))
	if strings.HasPrefix(raw, `"`) {
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil {
			return s
		}
	}
	return unescapeHTML(raw)
}

// htmlEscapes are the escapes encoding/json writes for HTML's sake, in the forms it
// writes them.
var htmlEscapes = map[string]byte{`u003c`: '<', `u003e`: '>', `u0026`: '&', `u003C`: '<', `u003E`: '>'}

// unescapeHTML turns the HTML escapes in raw's strings back into their characters,
// leaving every other escape (\", \\, \n, \u2028...) as it is. It reads escapes
// whole, so an escaped backslash followed by "u003e" stays as it was.
func unescapeHTML(raw string) string {
	if !strings.Contains(raw, `\u00`) {
		return raw
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			b.WriteByte(c)
			continue
		}
		if raw[i+1] == 'u' && i+6 <= len(raw) {
			if ch, ok := htmlEscapes[raw[i+1:i+6]]; ok {
				b.WriteByte(ch)
				i += 5
				continue
			}
		}
		// Any other escape is copied whole: the backslash and the character it escapes.
		b.WriteByte(c)
		b.WriteByte(raw[i+1])
		i++
	}
	return b.String()
}
