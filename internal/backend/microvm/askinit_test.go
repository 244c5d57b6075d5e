package microvm

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAskInitHostileLine: an init (or whatever runs in the VM as it) that answers with a
// line that never ends makes the request fail once the line passes maxInitLine, instead
// of the daemon holding all of it.
func TestAskInitHostileLine(t *testing.T) {
	host, vm := net.Pipe()
	defer host.Close()
	go func() {
		defer vm.Close()
		bufio.NewReader(vm).ReadString('\n') // the request
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 4 * maxInitLine / len(chunk) {
			if _, err := vm.Write(chunk); err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := askInit(ctx, host, "processes")
	if err == nil || !strings.Contains(err.Error(), "a line longer than") {
		t.Fatalf("askInit = %v, want the line refused for its length", err)
	}
}

// TestAskInitSkipsOtherAnswers: lines an earlier request left unread are skipped; the
// answer carrying this request's tag is returned.
func TestAskInitSkipsOtherAnswers(t *testing.T) {
	host, vm := net.Pipe()
	defer host.Close()
	go func() {
		defer vm.Close()
		buf := make([]byte, 256)
		n, _ := vm.Read(buf)
		tag, _, _ := strings.Cut(string(buf[:n]), " ")
		io.WriteString(vm, "0123456789abcdef {\"stale\":true}\n"+tag+" \"42\"\n")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	answer, err := askInit(ctx, host, "processes")
	if err != nil || string(answer) != "\"42\"\n" {
		t.Fatalf("askInit = %q, %v; want the tagged answer", answer, err)
	}
}
