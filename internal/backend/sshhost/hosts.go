package sshhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"golang.org/x/crypto/ssh"
)

// Host is a machine sandboxes can run on, reached over SSH: where, as whom, with which
// key, and the host key pinned when it was added.
type Host struct {
	// User and Addr (host:port) are where to log in.
	User string `json:"user"`
	Addr string `json:"addr"`
	// Identity is a private key file; empty means the user's default keys
	// (~/.ssh/id_ed25519, id_ecdsa, id_rsa) and ssh-agent.
	Identity string `json:"identity,omitempty"`
	// HostKey is the host's public key in authorized_keys form, pinned by `host add`:
	// any other key is refused.
	HostKey string `json:"host_key"`
	// Home, when set, is the directory paddock keeps its files in on the host; empty
	// means ~/.paddock (/var/lib/paddock-ssh for root, whose home sandboxes cannot reach).
	Home string `json:"home,omitempty"`
}

// URL is the host's ssh:// address, as `host add` takes it.
func (h Host) URL() string {
	host, port, _ := net.SplitHostPort(h.Addr)
	if port == "22" {
		return "ssh://" + h.User + "@" + host
	}
	return "ssh://" + h.User + "@" + h.Addr
}

// PublicKey is the pinned host key.
func (h Host) PublicKey() (ssh.PublicKey, error) {
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(h.HostKey))
	if err != nil {
		return nil, fmt.Errorf("the pinned host key: %w", err)
	}
	return k, nil
}

// HostsFile is the hosts' file beside the config file: a host's name to the Host.
type HostsFile struct {
	Hosts map[string]Host `json:"hosts"`
}

// HostsPath is where the hosts are kept: hosts.json in the config file's directory.
func HostsPath(configDir string) string { return filepath.Join(configDir, "hosts.json") }

// LoadHosts reads the hosts file; a missing file is no hosts.
func LoadHosts(configDir string) (HostsFile, error) {
	hf := HostsFile{Hosts: map[string]Host{}}
	path := HostsPath(configDir)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return hf, nil
	}
	if err != nil {
		return hf, err
	}
	if err := json.Unmarshal(data, &hf); err != nil {
		return hf, fmt.Errorf("%s: %w", path, err)
	}
	if hf.Hosts == nil {
		hf.Hosts = map[string]Host{}
	}
	return hf, nil
}

// Save writes the hosts file atomically, private to the user.
func (hf HostsFile) Save(configDir string) error {
	data, err := json.MarshalIndent(hf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	path := HostsPath(configDir)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Names lists the hosts' names, sorted.
func (hf HostsFile) Names() []string {
	names := make([]string, 0, len(hf.Hosts))
	for n := range hf.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var hostNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// CheckName refuses a host name that is not lower-case letters, digits, '.', '_', '-'.
func CheckName(name string) error {
	if !hostNameRE.MatchString(name) {
		return fmt.Errorf("a host's name is lower-case letters, digits, '.', '_' and '-' (at most 63), not %q", name)
	}
	return nil
}

// ParseURL reads ssh://USER@HOST[:PORT] into a user and a host:port address; the user
// defaults to the local one.
func ParseURL(raw string) (user, addr string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "ssh" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", "", fmt.Errorf("give the host as ssh://USER@HOST or ssh://USER@HOST:PORT, not %q", raw)
	}
	port := u.Port()
	if port == "" {
		port = "22"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("the port in %q is not a port number", raw)
	}
	if _, set := u.User.Password(); set {
		return "", "", fmt.Errorf("no password in the URL: paddock logs in with keys (--identity, or ssh-agent)")
	}
	user = u.User.Username()
	if user == "" {
		user = os.Getenv("USER")
	}
	if user == "" {
		return "", "", fmt.Errorf("give the user to log in as: ssh://USER@%s", u.Host)
	}
	return user, net.JoinHostPort(u.Hostname(), port), nil
}
