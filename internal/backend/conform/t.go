package conform

// T is what a check needs of whoever runs it: the methods of a test's *testing.T it calls,
// and Run, whose function takes a T. backendtest adapts a *testing.T to it; verify's
// runner is another. Fatal, Fatalf, Skip and Skipf end the check (the goroutine it runs
// in), as they end a test; Errorf marks it failed and lets it go on.
type T interface {
	// Name is the check's full name, its parents' first ("Exec/stdin").
	Name() string
	// Helper marks the caller as a helper, for where failures are reported.
	Helper()
	// Logf records a line of what the check saw.
	Logf(format string, args ...any)
	// Error and Errorf record a failure and go on.
	Error(args ...any)
	Errorf(format string, args ...any)
	// Fatal and Fatalf record a failure and end the check.
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	// Skip and Skipf end the check as not applicable here, saying why.
	Skip(args ...any)
	Skipf(format string, args ...any)
	// Failed says whether the check, or one of its parts, failed.
	Failed() bool
	// Cleanup registers f to run when the check and its parts are done, last first.
	Cleanup(f func())
	// Setenv sets an environment variable of this process for the check's time.
	Setenv(key, value string)
	// Run runs f as a part of the check named name, in a goroutine of its own, and
	// waits for it; it says whether the part passed.
	Run(name string, f func(t T)) bool
}
