package snapshot

import (
	"archive/tar"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/snapshot/storage"
)

// tarEntry is one regular file of a fake guest's archive: its header says size, and
// sent bytes of content follow (a hostile or old guest may send what its header says,
// whatever the bound).
type tarEntry struct {
	name   string
	size   int64
	omit   bool
	reader io.Reader
}

// fakeTarOut answers TarOutMax with entries, recording the bound it was asked for and
// how many bytes of content the host read.
func fakeTarOut(entries []tarEntry, asked *int64, read *int64) func(context.Context, string, string, int64, io.Writer) error {
	return func(ctx context.Context, root, path string, maxBytes int64, w io.Writer) error {
		*asked = maxBytes
		tw := tar.NewWriter(w)
		tw.WriteHeader(&tar.Header{Name: "deliverables/", Typeflag: tar.TypeDir, Mode: 0o755})
		for _, e := range entries {
			h := &tar.Header{Name: "deliverables/" + e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: e.size, Format: tar.FormatPAX}
			if e.omit {
				h.Size = 0
				h.PAXRecords = map[string]string{guestproto.OmittedRecord: "68719476736"}
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			n, err := io.Copy(tw, io.LimitReader(e.reader, h.Size))
			*read += n
			if err != nil {
				return err
			}
		}
		return tw.Close()
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRootWithinMaxWhole: the directories a snapshot keeps whole are taken up to
// MaxWholeBytes. A file the guest left out (its PAX record) is named as left out; a file
// a guest sends whole though it passes the bound (a guest older than the bound, or a
// hostile one) is not read, nor is the rest of that archive.
func TestRootWithinMaxWhole(t *testing.T) {
	st, err := storage.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{store: st, opts: Options{MaxWholeBytes: 1 << 20}}
	small := func(text string) tarEntry {
		return tarEntry{name: text, size: int64(len(text)), reader: strings.NewReader(text)}
	}

	// A guest that knows the bound.
	var asked, read int64
	m := &Manifest{}
	tk := &taking{s: s, m: m, progress: func(string) {}, tarOut: fakeTarOut([]tarEntry{
		small("a"), {name: "huge.img", omit: true}, small("c"),
	}, &asked, &read)}
	if err := tk.root(context.Background(), "/workspace/deliverables"); err != nil {
		t.Fatal(err)
	}
	if asked != 1<<20 {
		t.Errorf("the guest was asked for at most %d bytes, want %d", asked, 1<<20)
	}
	if got := paths(m); got != "/workspace/deliverables /workspace/deliverables/a /workspace/deliverables/c" {
		t.Errorf("kept %s", got)
	}
	if len(m.Left) != 1 || m.Left[0].Path != "/workspace/deliverables/huge.img" || !m.Left[0].OverLimit || !strings.Contains(m.Left[0].Why, "max_whole_mb") {
		t.Errorf("left out %+v", m.Left)
	}

	// A guest that sends 64 GiB anyway: the host reads none of it, and stops there.
	read = 0
	m = &Manifest{}
	tk = &taking{s: s, m: m, progress: func(string) {}, tarOut: fakeTarOut([]tarEntry{
		small("a"), {name: "huge.img", size: 64 << 30, reader: zeros{}}, small("c"),
	}, &asked, &read)}
	if err := tk.root(context.Background(), "/workspace/deliverables"); err != nil {
		t.Fatal(err)
	}
	if got := paths(m); got != "/workspace/deliverables /workspace/deliverables/a" {
		t.Errorf("kept %s", got)
	}
	if len(m.Left) != 2 || m.Left[0].Path != "/workspace/deliverables/huge.img" || m.Left[1].Path != "/workspace/deliverables" {
		t.Errorf("left out %+v", m.Left)
	}
	if read > 64<<20 {
		t.Errorf("the host read %d bytes of a file over the bound", read)
	}

	// The bound holds across the directories of one snapshot.
	m = &Manifest{}
	tk = &taking{s: s, m: m, progress: func(string) {}, whole: 1<<20 - 1, tarOut: fakeTarOut([]tarEntry{small("ab")}, &asked, &read)}
	if err := tk.root(context.Background(), "/home/agent/.claude"); err != nil {
		t.Fatal(err)
	}
	if asked != 1 || len(m.Left) != 2 {
		t.Errorf("with 1 byte left: asked for %d, left out %+v", asked, m.Left)
	}
}

func paths(m *Manifest) string {
	var out []string
	for _, f := range m.Files {
		out = append(out, f.Path)
	}
	return strings.Join(out, " ")
}
