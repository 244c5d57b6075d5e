package gitsync

// PathRunsOnHost says why a file at p, relative to a checkout's top, runs code on the host
// once merged there (runsOnHost, without a core.hooksPath), or "" when it does not. Alarms
// read it to tell an agent's ordinary work from a write to what the host would run.
func PathRunsOnHost(p string) string { return runsOnHost(p, "") }
