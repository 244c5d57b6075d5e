package guest

import (
	"runtime"
	"sync"
)

// spareThreads is how many idle OS threads the guest makes at its start.
const spareThreads = 16

var reserveOnce sync.Once

// reserveThreads makes the runtime start n threads at once and leaves them idle. A thread
// counts as a process against the sandbox's pids limit, and the Go runtime dies the first
// time it cannot make a thread it needs; but it never ends an idle thread, and takes an
// idle one before making a new one. So when a fork bomb inside has taken every process
// slot, the guest still has threads to go on serving with (and to stop the sandbox).
func reserveThreads(n int) {
	var locked, release sync.WaitGroup
	locked.Add(n)
	release.Add(1)
	for range n {
		go func() {
			// Each goroutine holds a thread of its own until every one is locked, then
			// hands it back to the runtime's idle threads.
			runtime.LockOSThread()
			locked.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	release.Done()
}
