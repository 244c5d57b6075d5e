package cli

import (
	"fmt"
	"text/tabwriter"
)

// listing starts a listing's output: with asJSON it writes list as JSON (an empty array
// when there is nothing, never null), and when list is empty it says empty on standard
// error; either way it returns a nil table and the error, if any. Otherwise it returns a
// table on standard output with header as its first row, for the caller's rows and Flush.
func listing[T any](f *Factory, asJSON bool, list []T, empty, header string) (*tabwriter.Writer, error) {
	if asJSON {
		if list == nil {
			list = []T{}
		}
		return nil, writeJSON(f, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(f.IO.ErrOut, empty)
		return nil, nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw, nil
}
