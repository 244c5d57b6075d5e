package vagrant_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fakeVagrant stands in for the vagrant command where the real one cannot show what a
// test needs (VirtualBox's saved and aborted states; a machine that fails to boot). It
// answers like Vagrant 2.3.4: it refuses to work without a Vagrantfile in its directory,
// keeps the machine's state in VAGRANT_DOTFILE_PATH, prints `status --machine-readable`
// line for line as the real one does, and moves between states as the real one would.
// Each call is appended to $FAKE_VAGRANT_LOG as JSON: the directory, the arguments and
// the variables vagrant reads. $FAKE_VAGRANT_FAIL names a file holding a subcommand that
// fails.
func fakeVagrant(args []string) int {
	cwd, _ := os.Getwd()
	dot := os.Getenv("VAGRANT_DOTFILE_PATH")
	if dot == "" {
		dot = filepath.Join(cwd, ".vagrant")
	}
	provider := os.Getenv("VAGRANT_DEFAULT_PROVIDER")
	if provider == "" {
		provider = "virtualbox"
	}
	if log := os.Getenv("FAKE_VAGRANT_LOG"); log != "" {
		line, _ := json.Marshal(map[string]any{"cwd": cwd, "args": args, "dotfile": dot, "provider": os.Getenv("VAGRANT_DEFAULT_PROVIDER"),
			"checkpoint": os.Getenv("VAGRANT_CHECKPOINT_DISABLE")})
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Write(append(line, '\n'))
			f.Close()
		}
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "Usage: vagrant [options] <command> [<args>]")
		return 1
	}
	if _, err := os.Stat(filepath.Join(cwd, "Vagrantfile")); err != nil {
		fmt.Fprintln(os.Stderr, "A Vagrant environment or target machine is required to run this\ncommand. Run `vagrant init` to create a new Vagrant environment. Or,\nget an ID of a target machine from `vagrant global-status` to run\nthis command on. A final option is to change to a directory with a\nVagrantfile and to try again.")
		return 1
	}
	stateFile := filepath.Join(dot, "fake-state")
	state := "not_created"
	if data, err := os.ReadFile(stateFile); err == nil {
		state = strings.TrimSpace(string(data))
	}
	set := func(s string) int {
		os.MkdirAll(dot, 0o755)
		os.WriteFile(stateFile, []byte(s), 0o644)
		return 0
	}
	var lose int
	var losing string
	failing, _ := os.ReadFile(os.Getenv("FAKE_VAGRANT_FAIL"))
	if fmt.Sscanf(string(failing), "lose %d %s", &lose, &losing); lose > 0 && losing == args[0] {
		// As the docker provider fails on an engine where other containers come and go: one
		// it listed was gone by the time it inspected it.
		os.WriteFile(os.Getenv("FAKE_VAGRANT_FAIL"), []byte(fmt.Sprintf("lose %d %s", lose-1, losing)), 0o644)
		fmt.Fprintf(os.Stderr, "A Docker command executed by Vagrant didn't complete successfully!\nCommand: [\"docker\", \"inspect\", \"3be1a26240\"]\nStderr: Error: No such object: 3be1a26240\n")
		return 1
	}
	if failing, _ := os.ReadFile(os.Getenv("FAKE_VAGRANT_FAIL")); string(failing) == args[0] {
		fmt.Fprintf(os.Stderr, "The guest machine entered an invalid state while waiting for it\nto boot. (fake failure of %s)\n", args[0])
		return 1
	}
	switch args[0] {
	case "status":
		short := strings.ReplaceAll(state, "_", " ")
		ts := time.Now().Unix()
		fmt.Printf("%d,default,metadata,provider,%s\n", ts, provider)
		fmt.Printf("%d,default,provider-name,%s\n", ts, provider)
		fmt.Printf("%d,default,state,%s\n", ts, state)
		fmt.Printf("%d,default,state-human-short,%s\n", ts, short)
		fmt.Printf("%d,default,state-human-long,The VM is %s. To change that%%!(VAGRANT_COMMA) run `vagrant up`.\n", ts, short)
		fmt.Printf("%d,,ui,info,Current machine states:\\n\\ndefault                   %s (%s)\\n\n", ts, short, provider)
		return 0
	case "up", "reload":
		return set("running")
	case "resume":
		if state != "saved" {
			fmt.Println("==> default: VM not suspended; booting it")
		}
		return set("running")
	case "halt":
		if state == "not_created" {
			fmt.Println("==> default: VM not created. Moving on...")
			return 0
		}
		return set("poweroff")
	case "suspend":
		if provider == "docker" {
			fmt.Fprintln(os.Stderr, "The requested action 'suspend' is not supported by the provider 'docker'.")
			return 1
		}
		if state != "running" {
			return 0
		}
		return set("saved")
	case "destroy":
		return set("not_created")
	case "ssh-config":
		if state != "running" {
			fmt.Fprintln(os.Stderr, "The provider for this Vagrant-managed machine is reporting that it\nis not yet ready for SSH.")
			return 1
		}
		fmt.Printf("Host default\n  HostName 127.0.0.1\n  User vagrant\n  Port 2222\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  IdentityFile %s/machines/default/%s/private_key\n  IdentitiesOnly yes\n", dot, provider)
		return 0
	case "validate":
		fmt.Println("Vagrantfile validated successfully.")
		return 0
	}
	fmt.Fprintf(os.Stderr, "fake vagrant: %s is not faked\n", args[0])
	return 1
}
