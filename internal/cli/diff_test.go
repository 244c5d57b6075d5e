package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// hostileDiff is a diff of sandbox files that hold escape sequences: a retitle, a screen
// clear, a raw C1 CSI byte and a carriage return that would hide the line before it.
const hostileDiff = "--- a/x.txt\n+++ b/x.txt\n@@ -0,0 +1,2 @@\n+\x1b]0;pwned\x07title\t日本\n+\x9b2J\rfake\n"

func TestDiffOutputEscapesOnTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil { // no \n to \r\n on the way
		t.Fatal(err)
	}
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once tty is closed
		read <- b
	}()
	w, flush := diffOutput(tty)
	// Two writes that split 日 between them, as git's output may arrive.
	cut := len(hostileDiff) - len("本\n+\x9b2J\rfake\n") - 1
	if _, err := w.Write([]byte(hostileDiff[:cut])); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(hostileDiff[cut:])); err != nil {
		t.Fatal(err)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	got := string(<-read)
	want := "--- a/x.txt\n+++ b/x.txt\n@@ -0,0 +1,2 @@\n+\\x1b]0;pwned\\x07title\t日本\n+\\x9b2J\\x0dfake\n"
	if got != want {
		t.Errorf("on a terminal:\n%q\nwant\n%q", got, want)
	}
}

func TestDiffOutputKeepsBytesOffTerminal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.patch")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, out := range []io.Writer{file, &buf} {
		w, flush := diffOutput(out)
		if _, err := w.Write([]byte(hostileDiff)); err != nil {
			t.Fatal(err)
		}
		if err := flush(); err != nil {
			t.Fatal(err)
		}
	}
	file.Close()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != hostileDiff || buf.String() != hostileDiff {
		t.Errorf("to a file: %q, to a pipe: %q; want both %q", got, buf.String(), hostileDiff)
	}
}
