package agent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/paddockhq/paddock/internal/agentproto"
	"github.com/paddockhq/paddock/internal/agentproto/agentpb"
)

type infoService struct {
	agentpb.UnimplementedAgentServer
	s *Server
}

// Info reports who and where the agent is.
func (i infoService) Info(_ context.Context, _ *agentpb.InfoRequest) (*agentpb.InfoResponse, error) {
	host, err := os.Hostname()
	if err != nil {
		i.s.log.Debug("agent info: hostname unavailable", "err", err)
	}
	rss, err := readRSS("/proc/self/status")
	if err != nil {
		i.s.log.Debug("agent info: rss unavailable", "err", err)
	}
	return &agentpb.InfoResponse{
		Version:     i.s.opts.Version,
		Protocol:    agentproto.Protocol,
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
