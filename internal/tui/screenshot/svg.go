// Package screenshot renders a terminal capture (text with SGR colour sequences, as
// `tmux capture-pane -p -e` writes it) as an SVG image, for the documentation. The capture
// is played into a terminal emulator, whose cells are then drawn.
package screenshot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"strings"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

const (
	cellW, cellH = 8.4, 17.0
	background   = "#1d1f21"
	foreground   = "#d0d0d0"
)

// SVG draws capture on a terminal of cols by rows cells.
func SVG(capture []byte, cols, rows int) []byte {
	term := vt.NewEmulator(cols, rows)
	// capture-pane ends lines with LF alone; a terminal's output processing adds the CR.
	// The last line's newline would scroll the first line away.
	capture = bytes.TrimSuffix(capture, []byte("\n"))
	term.Write(bytes.ReplaceAll(capture, []byte("\n"), []byte("\r\n")))

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n",
		float64(cols)*cellW+16, float64(rows)*cellH+16, float64(cols)*cellW+16, float64(rows)*cellH+16)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" rx="6" fill="%s"/>`+"\n", background)
	b.WriteString(`<g transform="translate(8 8)" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14" xml:space="preserve" style="white-space:pre">` + "\n")
	for y := range rows {
		x := 0
		for x < cols {
			c := term.CellAt(x, y)
			if c == nil {
				x++
				continue
			}
			// A run of cells with one style.
			start, style := x, c.Style
			var text bytes.Buffer
			textEnd := x // the cell after the run's last non-blank character
			for x < cols {
				c := term.CellAt(x, y)
				if c == nil || !c.Style.Equal(&style) {
					break
				}
				if c.Content == "" && c.Width == 0 {
					x++ // the second half of a wide character
					continue
				}
				content := c.Content
				if content == "" {
					content = " "
				}
				text.WriteString(content)
				x += max(1, c.Width)
				if content != " " {
					textEnd = x
				}
			}
			drawRun(&b, start, x, textEnd, y, style, text.String())
		}
	}
	b.WriteString("</g>\n</svg>\n")
	return b.Bytes()
}

// drawRun draws the cells [from, to) of row y: their background, then their text, whose
// last non-blank character ends before textEnd.
func drawRun(b *bytes.Buffer, from, to, textEnd, y int, st uv.Style, text string) {
	fg, bg := hex(st.Fg, foreground), hex(st.Bg, "")
	if st.Attrs&uv.AttrReverse != 0 {
		if bg == "" {
			bg = background
		}
		fg, bg = bg, fg
	}
	if bg != "" {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
			float64(from)*cellW, float64(y)*cellH, float64(to-from)*cellW, cellH, bg)
	}
	text = strings.TrimRight(text, " ")
	if strings.TrimSpace(text) == "" {
		return
	}
	attrs := ""
	if st.Attrs&uv.AttrBold != 0 {
		attrs += ` font-weight="bold"`
	}
	if st.Attrs&uv.AttrFaint != 0 {
		attrs += ` opacity="0.6"`
	}
	var esc bytes.Buffer
	// No-break spaces: an SVG text collapses runs of plain ones.
	xml.EscapeText(&esc, []byte(strings.ReplaceAll(text, " ", "\u00a0")))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s" textLength="%.1f" lengthAdjust="spacingAndGlyphs"%s>%s</text>`+"\n",
		float64(from)*cellW, float64(y)*cellH+13, fg, float64(textEnd-from)*cellW, attrs, esc.String())
}

// palette is the 16 basic colours, as a dark terminal theme draws them.
var palette = [16]string{
	"#1d1f21", "#cc6666", "#b5bd68", "#f0c674", "#81a2be", "#b294bb", "#8abeb7", "#c5c8c6",
	"#707880", "#ff7b7b", "#c9d47a", "#ffd98a", "#8fbfff", "#e09ff0", "#9fe3d9", "#ffffff",
}

// hex is c as #rrggbb, or def when c is unset.
func hex(c color.Color, def string) string {
	if c == nil {
		return def
	}
	if b, ok := c.(ansi.BasicColor); ok && int(b) < len(palette) {
		return palette[b]
	}
	r, g, bl, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, bl>>8)
}
