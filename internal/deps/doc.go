// Package deps holds no code: its test (TestTowers) guards what each of paddock's sides
// links. The clients (cli, tui, front, webui, the API's client) link the API's client
// and wire and no server package; the lean front (cmd/paddock) links none of the full
// program's; the guest (cmd/paddock-guest) links only what a sandbox needs. Run
// `go test ./internal/deps/` after moving an import across.
package deps
