package guestclient_test

import (
	"os"
	"path/filepath"
	"testing"
)

// jail makes a root directory three levels below a temporary directory, so that
// "../../.." from inside it still lands in the temporary directory. It returns the root
// and the temporary directory.
func jail(tb testing.TB) (root, outside string) {
	tb.Helper()
	outside = tb.TempDir()
	root = filepath.Join(outside, "a", "b", "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	return root, outside
}

func writeFile(tb testing.TB, path string, data string, mode os.FileMode) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		tb.Fatal(err)
	}
}
