package front

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config/paths"
)

// LocalContext names the daemon of this machine, on its unix socket.
const LocalContext = "local"

// A Context is a daemon the CLI talks to besides this machine's: one serving the API
// over HTTPS, with the file of its token and, optionally, the CA its certificate is
// signed by. Contexts are kept in contexts.json beside the config file.
type Context struct {
	URL       string `json:"url"`
	TokenFile string `json:"token_file"`
	CAFile    string `json:"ca_file,omitempty"`
}

// ContextFile is contexts.json: the contexts, and the one `context use` chose.
type ContextFile struct {
	Current  string             `json:"current,omitempty"`
	Contexts map[string]Context `json:"contexts"`
}

// ContextsPath is where the contexts are kept.
func ContextsPath(p paths.Paths) string {
	return filepath.Join(filepath.Dir(p.Config), "contexts.json")
}

// LoadContexts reads the contexts file; none is no context but local.
func LoadContexts(p paths.Paths) (ContextFile, error) {
	cf := ContextFile{Contexts: map[string]Context{}}
	data, err := os.ReadFile(ContextsPath(p))
	if errors.Is(err, os.ErrNotExist) {
		return cf, nil
	}
	if err != nil {
		return cf, err
	}
	if err := json.Unmarshal(data, &cf); err != nil {
		return cf, fmt.Errorf("%s: %w", ContextsPath(p), err)
	}
	if cf.Contexts == nil {
		cf.Contexts = map[string]Context{}
	}
	return cf, nil
}

// ContextName is the context a command talks to: --context (flag), else PADDOCK_CONTEXT,
// else the one `context use` chose, else local.
func ContextName(flag string, cf ContextFile) string {
	switch {
	case flag != "":
		return flag
	case os.Getenv("PADDOCK_CONTEXT") != "":
		return os.Getenv("PADDOCK_CONTEXT")
	case cf.Current != "":
		return cf.Current
	}
	return LocalContext
}

// Open makes the client of a remote context, reading its token and CA files.
func Open(rc Context) (*wire.Client, error) {
	token, err := os.ReadFile(rc.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("the context's token: %w", err)
	}
	var ca []byte
	if rc.CAFile != "" {
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			return nil, fmt.Errorf("the context's CA: %w", err)
		}
	}
	return wire.NewRemoteClient(rc.URL, strings.TrimSpace(string(token)), ca)
}
