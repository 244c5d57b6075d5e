package screenshot

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSVGDrawsTextColoursAndReverse(t *testing.T) {
	capture := "plain \x1b[1;31mred bold\x1b[0m\n\x1b[7msel<&>\x1b[0m ✕ wide界x\n"
	out := string(SVG([]byte(capture), 30, 3))
	if err := xml.Unmarshal([]byte(out), new(struct{})); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, out)
	}
	for _, want := range []string{
		`fill="#d0d0d0" textLength="42.0" lengthAdjust="spacingAndGlyphs">plain</text>`,
		`fill="#cc6666" textLength="67.2" lengthAdjust="spacingAndGlyphs" font-weight="bold">red`,
		`>sel&lt;&amp;&gt;</text>`, // escaped
		"red\u00a0bold",            // spaces that do not collapse
		`fill="#d0d0d0"/>`,         // the reversed run's background
		"\u00a0✕\u00a0wide界x</text>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the SVG lacks %s:\n%s", want, out)
		}
	}
}

// TestRenderScreenshots turns the terminal captures in $PADDOCK_SCREENSHOTS (tui-*.ansi,
// from `tmux capture-pane -p -e`) into SVG images beside them.
func TestRenderScreenshots(t *testing.T) {
	dir := os.Getenv("PADDOCK_SCREENSHOTS")
	if dir == "" {
		t.Skip("set PADDOCK_SCREENSHOTS to the directory of the captures")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tui-*.ansi"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		cols := 0
		for _, l := range lines {
			cols = max(cols, len([]rune(stripSGR(l))))
		}
		if err := os.WriteFile(strings.TrimSuffix(f, ".ansi")+".svg", SVG(data, cols, len(lines)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// stripSGR removes colour sequences, to measure a line.
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
