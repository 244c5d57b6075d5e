package gitsync

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// pkt is s as one pkt-line.
func pkt(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// TestRefWatchRefusesEndlessListing: upload-pack in the sandbox that lists refs (or
// capabilities) forever is cut once the listing passes what a refWatch holds, before it
// holds more, and none of the listing reaches git.
func TestRefWatchRefusesEndlessListing(t *testing.T) {
	t.Parallel()
	oid := strings.Repeat("a", 40)
	long := strings.Repeat("x", 60000)
	tests := []struct {
		name    string
		prelude string           // sent first, and passed on
		line    func(int) string // the i-th line of the endless rest
		wantErr string
	}{
		{"v0: long refs", "", func(i int) string { return pkt(fmt.Sprintf("%s refs/heads/%s%d\n", oid, long, i)) }, "over 64 MiB"},
		{"v2: endless capabilities", "", func(i int) string { return pkt(fmt.Sprintf("agent=%s%d\n", long, i)) }, "over 64 MiB"},
		{"v2: endless ls-refs answer", pkt("version 2\n") + pkt("ls-refs\n") + "0000",
			func(i int) string { return pkt(oid + " refs/heads/b" + strconv.Itoa(i) + "\n") }, "over 1000000 refs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			cut := false
			w := &refWatch{w: &got, cut: func() { cut = true }, seen: func(map[string]string) error { return nil }}
			first := tt.prelude
			if strings.HasPrefix(tt.name, "v2") && first == "" {
				first = pkt("version 2\n")
			}
			if _, err := w.Write([]byte(first)); err != nil {
				t.Fatal(err)
			}
			accepted, lines := 0, 0
			var chunk []byte
			var err error
			for accepted <= 2*maxListing && lines <= 2*maxRefs {
				chunk = chunk[:0]
				for len(chunk) < 32<<10 {
					chunk = append(chunk, tt.line(lines)...)
					lines++
				}
				if _, err = w.Write(chunk); err != nil {
					break
				}
				accepted += len(chunk)
			}
			switch {
			case err == nil:
				t.Fatalf("%d MiB of %d lines taken without an end", accepted>>20, lines)
			case !strings.Contains(err.Error(), "in the sandbox") || !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("err %q, want it to name the sandbox's git and %q", err, tt.wantErr)
			case accepted > maxListing:
				t.Fatalf("held %d MiB before refusing", accepted>>20)
			case !cut || w.held != nil || w.refs != nil:
				t.Fatalf("cut %v, still holding %d bytes and %d refs", cut, len(w.held), len(w.refs))
			case got.String() != tt.prelude:
				t.Fatalf("passed on %d bytes of the listing", got.Len()-len(tt.prelude))
			}
		})
	}
}
