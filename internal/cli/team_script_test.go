package cli_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddockhq/paddock/internal/ghauth/githubtest"
)

// fakeGitHubs are the scripts' fake GitHubs, by script.
var fakeGitHubs sync.Map // *testscript.TestScript -> *githubtest.Server

// gitHub drives a fake GitHub (internal/ghauth/githubtest: it checks every request as
// GitHub would) for a script's daemon to sign people in with:
//
//	github start ORG                  starts it for the app paddock-test; sets GITHUB_URL and
//	                                  GITHUB_SECRET (a file holding the app's client secret)
//	github user LOGIN ID MEMBERSHIP   an account; MEMBERSHIP of ORG: active, pending or none
//	github member LOGIN MEMBERSHIP    changes an account's membership
//	github device INTERVAL STEP EXPIRY ANSWERS APPROVER
//	                                  the next device flow: its interval and slow_down step in
//	                                  seconds, how long its code lasts, the answers its first
//	                                  polls get (comma-separated, '' for none), and who then
//	                                  approves it ('' : nobody)
//	github check                      fails on any request GitHub would refuse or that broke
//	                                  its rules; prints the requests served
func gitHub(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: github start|user|member|device|check ...")
	}
	if args[0] == "start" {
		if len(args) != 2 {
			ts.Fatalf("usage: github start ORG")
		}
		gh := githubtest.New(githubtest.App{ClientID: "paddock-test", ClientSecret: "s3cret-app-" + strconv.Itoa(os.Getpid())}, args[1])
		ts.Defer(gh.Close)
		fakeGitHubs.Store(ts, gh)
		secret := ts.MkAbs("github-secret")
		ts.Check(os.WriteFile(secret, []byte(gh.App.ClientSecret+"\n"), 0o600))
		ts.Setenv("GITHUB_URL", gh.URL)
		ts.Setenv("GITHUB_SECRET", secret)
		return
	}
	v, ok := fakeGitHubs.Load(ts)
	if !ok {
		ts.Fatalf("github start first")
	}
	gh := v.(*githubtest.Server)
	membership := func(s string) string {
		if s == "none" {
			return ""
		}
		return s
	}
	switch {
	case args[0] == "user" && len(args) == 4:
		id, err := strconv.ParseInt(args[2], 10, 64)
		ts.Check(err)
		gh.AddUser(args[1], id, membership(args[3]))
	case args[0] == "member" && len(args) == 3:
		gh.SetMembership(args[1], membership(args[2]))
	case args[0] == "device" && len(args) == 6:
		interval, err := strconv.Atoi(args[1])
		ts.Check(err)
		step, err := strconv.Atoi(args[2])
		ts.Check(err)
		expiry, err := time.ParseDuration(args[3])
		ts.Check(err)
		var answers []string
		if args[4] != "" {
			answers = strings.Split(args[4], ",")
		}
		gh.SetDevice(interval, step, expiry, answers, args[5])
	case args[0] == "check" && len(args) == 1:
		fmt.Fprintln(ts.Stdout(), strings.Join(gh.Requests(), "\n"))
		if wrong := gh.Wrong(); len(wrong) > 0 {
			ts.Fatalf("requests GitHub would refuse:\n%s", strings.Join(wrong, "\n"))
		}
	default:
		ts.Fatalf("usage: github start|user|member|device|check ...")
	}
}
