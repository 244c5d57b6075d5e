package servecmd

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paddockhq/paddock/internal/backend/conform"
)

// verifyDeniedHost is a destination no allowlist names, asked for through the proxy.
const verifyDeniedHost = "paddock-verify-denied.example.com"

// checkProxyFailsClosed: from inside the private daemon's sandbox, a destination the
// allowlist does not name is refused by the egress proxy (403) and recorded as a
// denial; a connection that skips the proxy reaches neither a public address nor this
// host's (a port listening on all of them accepts nothing); and with the daemon
// stopped, its sandbox still running, a request through HTTPS_PROXY fails instead of
// going out directly.
func checkProxyFailsClosed(ctx context.Context, d *verifyDaemon) (conform.Status, string, []string) {
	if out, err := d.inside(ctx, `command -v curl`); err != nil {
		return conform.NotApplicable, "no curl in the sandbox to make requests with: " + firstLine(out), nil
	}
	var fails []string
	// Refused by the proxy, and recorded.
	out, err := d.inside(ctx, `curl -sS -m 10 -o /dev/null -w "connect=%{http_connect}" "https://$1/" 2>&1; echo " curl=$?"`, verifyDeniedHost)
	if err != nil {
		return conform.Fail, "ask the proxy for " + verifyDeniedHost + ": " + firstLine(out), nil
	}
	if !strings.Contains(out, "connect=403") || strings.Contains(out, " curl=0") {
		fails = append(fails, fmt.Sprintf("a request for %s (on no allowlist) was not refused with 403 by the egress proxy: %s", verifyDeniedHost, strings.TrimSpace(out)))
	}
	denials, err := d.run(ctx, "net", "denials", "--json")
	if err != nil || !strings.Contains(denials, `"host": "`+verifyDeniedHost+`"`) {
		fails = append(fails, fmt.Sprintf("the refused request for %s is not in `paddock net denials`: %s", verifyDeniedHost, firstLine(denials)))
	}

	// Skipping the proxy: a public address, and this host's own on a port that listens.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return conform.Fail, "listen on this host: " + err.Error(), nil
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	targets := []string{"https://1.1.1.1/", "https://8.8.8.8/"}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLinkLocalUnicast() {
			targets = append(targets, fmt.Sprintf("http://%s/", net.JoinHostPort(ip.IP.String(), fmt.Sprint(port))))
		}
	}
	out, err = d.inside(ctx, `for u in "$@"; do env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -s -m 3 -o /dev/null "$u"; echo "$u curl=$?"; done`, targets...)
	if err != nil {
		return conform.Fail, "connect from inside without the proxy: " + firstLine(out), nil
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasSuffix(l, " curl=0") {
			fails = append(fails, "a request skipping the proxy went out: "+strings.TrimSuffix(l, " curl=0"))
		}
	}
	if n := accepted.Load(); n > 0 {
		fails = append(fails, fmt.Sprintf("a connection skipping the proxy reached this host's port %d (%d accepted)", port, n))
	}

	// The daemon gone: a session of the sandbox asks through HTTPS_PROXY, time-stamped,
	// while the daemon runs, once it has stopped, and once it is back.
	probe := `i=0; while [ $i -lt 60 ]; do r=$(curl -sS -m 2 -o /dev/null -w "connect=%{http_connect} code=%{http_code}" https://api.anthropic.com/ 2>&1); ` +
		`echo "$(date +%s) $r curl=$?" | tr -s "\n" " " >> /tmp/paddock-verify-noproxy; echo >> /tmp/paddock-verify-noproxy; i=$((i+1)); sleep 0.3; done`
	if out, err := d.run(ctx, "chat", "repo", "--new", "verify-noproxy", "--agent", "shell", "--command", probe); err != nil {
		return conform.Fail, "start a session to ask once the daemon is gone: " + firstLine(out), nil
	}
	time.Sleep(time.Second)
	d.halt()
	gone := time.Now().Unix() + 1
	time.Sleep(4 * time.Second)
	back := time.Now().Unix()
	if err := d.serve(ctx); err != nil {
		return conform.Fail, "start the private daemon again to read what its sandbox found: " + err.Error(), nil
	}
	out, err = d.inside(ctx, `cat /tmp/paddock-verify-noproxy`)
	if err != nil {
		fails = append(fails, "with the daemon stopped, the sandbox's requests through HTTPS_PROXY left no answer (did the sandbox keep running?): "+firstLine(out))
	}
	asked, last := 0, ""
	for _, l := range strings.Split(out, "\n") {
		var ts int64
		if _, err := fmt.Sscan(l, &ts); err != nil || ts < gone || ts >= back {
			continue
		}
		asked++
		last = strings.TrimSpace(l)
		if strings.Contains(l, "curl=0") || !strings.Contains(l, "connect=000 code=000") {
			fails = append(fails, "with the daemon stopped, a request through HTTPS_PROXY did not fail: "+strings.TrimSpace(l))
			break
		}
	}
	if err == nil && asked == 0 {
		fails = append(fails, "the sandbox made no request through HTTPS_PROXY while the daemon was stopped: "+strings.Join(strings.Fields(out), " "))
	}
	notes := []string{fmt.Sprintf("skipping the proxy, tried: %s", strings.Join(targets, " ")),
		fmt.Sprintf("with the daemon stopped, asked https://api.anthropic.com/ (on the default allowlist) through HTTPS_PROXY %d times; the last: %s", asked, last)}
	if len(fails) > 0 {
		return conform.Fail, strings.Join(fails, "\n"), notes
	}
	return conform.Pass, "", notes
}
