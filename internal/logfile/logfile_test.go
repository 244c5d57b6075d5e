package logfile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sizes returns the size of each of path, path.1, path.2... that exists, and their total.
func sizes(t *testing.T, path string) (map[string]int64, int64) {
	t.Helper()
	matches, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	var total int64
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(m)] = fi.Size()
		total += fi.Size()
	}
	return out, total
}

func TestRotatesAndStaysBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "daemon.log")
	const max, keep = 10_000, 3
	l, err := Open(path, Options{MaxBytes: max, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	// 1 MB of log lines from several writers at once: 100 times what may be kept.
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2500; i++ {
				fmt.Fprintf(l, "writer=%d line=%05d %s\n", w, i, strings.Repeat("x", 70))
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, total := sizes(t, path)
	want := []string{"daemon.log", "daemon.log.1", "daemon.log.2", "daemon.log.3"}
	if len(files) != len(want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	for _, name := range want {
		if files[name] == 0 || files[name] > max {
			t.Errorf("%s holds %d bytes, want 1 to %d", name, files[name], max)
		}
	}
	if total > (keep+1)*max {
		t.Errorf("%d bytes kept in all, want at most %d", total, (keep+1)*max)
	}
	// Lines are whole, and the newest are in daemon.log.
	for name := range files {
		data, _ := os.ReadFile(filepath.Join(filepath.Dir(path), name))
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if len(line) != len("writer=0 line=00000 ")+70 {
				t.Fatalf("%s has a broken line %q", name, line)
			}
		}
	}
	current, _ := os.ReadFile(path)
	if !bytes.Contains(current, []byte("line=02499")) {
		t.Errorf("daemon.log lacks the last lines")
	}
}

func TestAppendsToAnExistingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "daemon.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("old\n", 2400)), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{MaxBytes: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fmt.Fprintf(l, "%s\n", strings.Repeat("n", 99)) // 9,600 + 100 bytes: still fits
	if files, _ := sizes(t, path); len(files) != 1 || files["daemon.log"] != 9700 {
		t.Fatalf("files %v, want daemon.log alone with 9,700 bytes", files)
	}
	fmt.Fprintf(l, "%s\n", strings.Repeat("n", 399)) // past 10,000: rotated first
	files, _ := sizes(t, path)
	if files["daemon.log"] != 400 || files["daemon.log.1"] != 9700 {
		t.Fatalf("files %v, want daemon.log with the new 400 bytes and daemon.log.1 with the old 9,700", files)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the new log's mode is %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// TestStderrFollowsTheRotation runs a child that logs past a rotation and then writes to
// its stderr, as a panic would: that must land in the current log.
func TestStderrFollowsTheRotation(t *testing.T) {
	if path := os.Getenv("LOGFILE_TEST_CHILD"); path != "" {
		l, err := Open(path, Options{MaxBytes: 1000, Keep: 2, Stdio: true})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		for i := 0; i < 30; i++ {
			fmt.Fprintf(l, "line %02d %s\n", i, strings.Repeat("x", 90))
		}
		fmt.Fprintln(os.Stderr, "written to stderr after the rotations")
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "daemon.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStderrFollowsTheRotation$")
	cmd.Env = append(os.Environ(), "LOGFILE_TEST_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	current, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(current, []byte("written to stderr after the rotations")) {
		t.Errorf("stderr did not follow the rotation; daemon.log holds:\n%s", current)
	}
	if files, _ := sizes(t, path); len(files) != 3 {
		t.Errorf("files %v, want daemon.log and 2 rotated", files)
	}
}
