package archive

import (
	"archive/tar"
	"bytes"
	"io"
	"slices"
	"testing"
)

// TestSubtree: the entries under top come out named from top, top itself, entries
// outside it and the skipped ones (with what is beneath a skipped directory) left out,
// their content whole.
func TestSubtree(t *testing.T) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	for _, e := range []struct{ name, body string }{
		{"workspace/", ""}, {"workspace/a.txt", "a"}, {"workspace/.mcp.json", "secret"},
		{"workspace/d/", ""}, {"workspace/d/b.txt", "b"}, {"workspace/.mcp.json.d/c", "c"}, {"other/x", "x"},
	} {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.body == "" {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		tw.WriteHeader(h)
		tw.Write([]byte(e.body))
	}
	tw.Close()
	var out bytes.Buffer
	if err := Subtree(&out, &in, "workspace", ".mcp.json", "d"); err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got = append(got, h.Name+"="+string(body))
	}
	if want := []string{"a.txt=a", ".mcp.json.d/c=c"}; !slices.Equal(got, want) {
		t.Errorf("Subtree gave %q, want %q", got, want)
	}
}
