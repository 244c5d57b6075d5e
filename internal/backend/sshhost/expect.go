package sshhost

import (
	"context"
	"fmt"
	"os"

	"github.com/paddockhq/paddock/internal/backend"
)

var _ backend.Expecter = (*SSH)(nil)

// Expect implements backend.Expecter: a sandbox on a host is one of the host's backend
// (bwrap, docker), so the checks expect of it what that backend expects there, asked of
// the host. That is the host a sandbox with no --host goes to (the only one); where it
// cannot be told or reached, nothing is expected but what a namespaced sandbox holds.
func (b *SSH) Expect(ctx context.Context, runtime string) backend.Expect {
	host, err := b.place(backend.Spec{})
	if err != nil {
		return backend.Expect{}
	}
	var e backend.Expect
	b.do(ctx, host, func(l *Link) error {
		resp, err := l.call(ctx, request{Op: opExpect, Runtime: runtime})
		if resp.Expect != nil {
			e = *resp.Expect
		}
		return err
	})
	return e
}

// Leftovers lists what a destroyed sandbox left: its record here of which host it was on,
// and what the host's backend finds left there (on the host a new sandbox goes to).
func (b *SSH) Leftovers(id backend.ID) []string {
	var left []string
	if _, err := os.Stat(b.recordPath(id)); err == nil {
		left = append(left, "the record of which host it was on: "+b.recordPath(id))
	}
	host, err := b.place(backend.Spec{})
	if err != nil {
		return left
	}
	ctx := context.Background()
	err = b.do(ctx, host, func(l *Link) error {
		resp, err := l.call(ctx, request{Op: opLeftovers, ID: id})
		for _, s := range resp.Left {
			left = append(left, "on host "+host+": "+s)
		}
		return err
	})
	if err != nil {
		left = append(left, fmt.Sprintf("on host %s: could not look: %v", host, err))
	}
	return left
}
