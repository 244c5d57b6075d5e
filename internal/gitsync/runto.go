package gitsync

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/paddockhq/paddock/internal/tailbuf"
)

// RunTo runs git with args, writing its standard output to w as git makes it: for output
// too large to hold, such as a diff of everything a sandbox changed.
func (g *Git) RunTo(ctx context.Context, w io.Writer, args ...string) error {
	cmd := g.command(ctx, args...)
	var stderr tailbuf.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
