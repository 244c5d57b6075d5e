package guest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

type infoService struct {
	s *Server
}

// Info reports who and where the guest is.
func (i infoService) Info(_ context.Context, _ *guestpb.InfoRequest) (*guestpb.InfoResponse, error) {
	host, err := os.Hostname()
	if err != nil {
		i.s.log.Debug("guest info: hostname unavailable", "err", err)
	}
	rss, err := readRSS("/proc/self/status")
	if err != nil {
		i.s.log.Debug("guest info: rss unavailable", "err", err)
	}
	return &guestpb.InfoResponse{
		Version:     i.s.opts.Version,
		Protocol:    guestproto.Protocol,
		Pid:         int32(os.Getpid()),
		Uid:         int32(os.Getuid()),
		Hostname:    host,
		StartedUnix: i.s.started.Unix(),
		RssBytes:    rss,
		Sandbox:     i.s.opts.Sandbox,
	}, nil
}

// readRSS returns the VmRSS line of a /proc/<pid>/status file, in bytes.
func readRSS(statusPath string) (int64, error) {
	data, err := os.ReadFile(statusPath)
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read rss: parse %q: %w", rest, err)
		}
		if len(fields) > 1 && string(fields[1]) == "kB" {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("read rss: no VmRSS line in %s", statusPath)
}
