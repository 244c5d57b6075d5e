package backend

import (
	"io"
	"os"
)

// ReadEnd reads at most the last n bytes of the file at path: the end of a log a
// sandbox writes (a guest's log, a VM's console), which may be as large as it likes.
func ReadEnd(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.NewSectionReader(f, max(fi.Size()-n, 0), n))
}
