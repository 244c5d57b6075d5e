package archive

import (
	"archive/tar"
	"errors"
	"io"
	"slices"
	"strings"
)

// Subtree copies the entries of the tar archive r that lie under top/ to a tar archive
// on w, named relative to top (top itself left out), leaving out the entries named in
// skip (relative names) and, when one is a directory, nothing beneath it.
func Subtree(w io.Writer, r io.Reader, top string, skip ...string) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rel, ok := strings.CutPrefix(h.Name, top+"/")
		rel = strings.TrimSuffix(rel, "/")
		if !ok || rel == "" || slices.ContainsFunc(skip, func(s string) bool { return rel == s || strings.HasPrefix(rel, s+"/") }) {
			continue
		}
		h.Name = strings.TrimPrefix(h.Name, top+"/")
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	return tw.Close()
}
