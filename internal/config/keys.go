package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// KeyWarning says that a config file holds an API key where others may read it.
type KeyWarning struct {
	// Path is the config file.
	Path string `json:"path"`
	// Keys name where the keys are, as dotted TOML keys (providers.anthropic.key), or
	// "line N" when the file does not parse.
	Keys []string `json:"keys"`
	// Problem says who else may read the file.
	Problem string `json:"problem"`
	// Fix says what to do.
	Fix string `json:"fix"`
}

// keyValue matches the shapes of the providers' API keys: Anthropic (sk-ant-...), OpenAI
// (sk-..., sk-proj-...) and Google (AIza...).
var keyValue = regexp.MustCompile(`\b(sk-ant-[A-Za-z0-9_-]{10,}|sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,})`)

// keyName reports whether a TOML key names a secret: key, api_key, anthropic_api_key,
// x-api-key, token, secret, password, authorization... but not key_command or key_env,
// which say where the key is.
func keyName(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	switch n {
	case "key", "apikey", "api_key", "token", "secret", "password", "authorization":
		return true
	}
	for _, suffix := range []string{"_api_key", "_apikey", "_token", "_secret", "_password"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// CheckKeys looks in the config file at path for API keys and warns when anyone but its
// owner may read it: its group or other users (mode & 0o044), or anyone who gets a copy
// of /etc (backups, configuration management and packages copy it around). A key belongs
// in the daemon's environment, or behind key_command. A missing file, or one with no key,
// gives nil.
func CheckKeys(path string) (*KeyWarning, error) {
	return checkKeys(path, "/etc")
}

func checkKeys(path, etc string) (*KeyWarning, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	keys := findKeys(data)
	if len(keys) == 0 {
		return nil, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	w := &KeyWarning{Path: path, Keys: keys}
	elsewhere := "take the key out of the file: the daemon reads ANTHROPIC_API_KEY, OPENAI_API_KEY and GEMINI_API_KEY " +
		"(or a [providers.NAME] key_env) from its environment, and key_command = \"pass show anthropic\" asks a password manager"
	switch {
	case resolved == etc || strings.HasPrefix(resolved, etc+"/"):
		w.Problem = fmt.Sprintf("lies under %s, where backups, configuration management and packages copy files around", etc)
		w.Fix = elsewhere + " (for a system service, an environment file of mode 600 outside " + etc + ")"
	case fi.Mode().Perm()&0o044 != 0:
		w.Problem = fmt.Sprintf("is readable by users other than its owner (mode %04o)", fi.Mode().Perm())
		w.Fix = fmt.Sprintf("chmod 600 %s; better, %s", path, elsewhere)
	default:
		return nil, nil
	}
	return w, nil
}

// findKeys returns where data (TOML) holds values that look like API keys: a value of a
// key named like a secret (and not a ${NAME} reference), or any value shaped like a
// provider's key.
func findKeys(data []byte) []string {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		// Not TOML the daemon would run with, but it may still leak a key.
		var found []string
		for i, line := range strings.Split(string(data), "\n") {
			if keyValue.MatchString(line) {
				found = append(found, fmt.Sprintf("line %d", i+1))
			}
		}
		return found
	}
	var found []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				if s, ok := x.(string); ok {
					if keyValue.MatchString(s) || keyName(k) && strings.TrimSpace(s) != "" && !strings.Contains(s, "${") {
						found = append(found, p)
					}
					continue
				}
				walk(p, x)
			}
		case []any:
			for i, x := range v {
				p := fmt.Sprintf("%s[%d]", prefix, i)
				if s, ok := x.(string); ok {
					if keyValue.MatchString(s) {
						found = append(found, p)
					}
					continue
				}
				walk(p, x)
			}
		}
	}
	walk("", doc)
	sort.Strings(found)
	return found
}
