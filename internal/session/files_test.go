package session

import "testing"

func TestWithSection(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"a new file", "", "<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
		{"the user's file kept, the section after it", "# mine\nkeep me", "# mine\nkeep me\n\n<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
		{"the section replaced in place", "top\n<!-- paddock -->\nold\nlines\n<!-- /paddock -->\nbottom\n", "top\n<!-- paddock -->\nnew\n<!-- /paddock -->\nbottom\n"},
		{"another section left alone", "<!-- paddock-disposable -->\nnote\n<!-- /paddock-disposable -->\n",
			"<!-- paddock-disposable -->\nnote\n<!-- /paddock-disposable -->\n\n<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
		{"an unclosed marker is not trusted", "<!-- paddock -->\nold\n", "<!-- paddock -->\nold\n\n<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
	}
	for _, tt := range tests {
		if got := string(withSection([]byte(tt.text), "paddock", []byte("new\n"))); got != tt.want {
			t.Errorf("%s:\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}
