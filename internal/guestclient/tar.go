package guestclient

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// TarOut writes to w a tar archive (PAX) of path: a file, a symlink (archived as a link)
// or a directory with everything beneath it. Entry names start with path's last element:
// archiving "out" gives "out/...", archiving "a.bin" gives "a.bin".
func (c *Client) TarOut(ctx context.Context, root, path string, w io.Writer) error {
	return c.TarOutMax(ctx, root, path, 0, w)
}

// TarOutMax is TarOut with at most maxBytes of file content in the archive (0: no
// limit): a regular file that would pass it is an entry with no content, its size in
// the PAX record guestproto.OmittedRecord. A guest older than this bound sends every
// file whole: a caller that must not take more checks the entries' sizes too.
func (c *Client) TarOutMax(ctx context.Context, root, path string, maxBytes int64, w io.Writer) error {
	op := "tar " + path
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.files.TarOut(ctx, &guestpb.PathRequest{Root: root, Path: path, MaxBytes: maxBytes})
	if err != nil {
		return translate(ctx, op, err)
	}
	_, err = copyChunks(ctx, op, stream.Recv, w)
	return err
}

// TarIn extracts the tar archive r delivers into the directory path, creating it (and
// its parents) when missing. Nothing changes beneath path unless the whole archive
// arrives and extracts cleanly. Regular files, directories and symlinks are extracted
// with their modes and times; other entries are skipped. Entries with absolute names or
// "..", or that would be written through a symlink, fail the call (ErrPathEscapes).
// It returns the number of files and symlinks extracted and the bytes of file content.
func (c *Client) TarIn(ctx context.Context, root, path string, r io.Reader) (files, bytes int64, err error) {
	op := "untar into " + path
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.files.TarIn(ctx)
	if err != nil {
		return 0, 0, translate(ctx, op, err)
	}
	err = stream.Send(&guestpb.TarInRequest{Msg: &guestpb.TarInRequest_Header{Header: &guestpb.PathRequest{
		Root: root, Path: path,
	}}})
	if err == nil {
		err = sendChunks(r, func(b []byte) error {
			return stream.Send(&guestpb.TarInRequest{Msg: &guestpb.TarInRequest_Data{Data: b}})
		})
	}
	var inErr *inputError
	if errors.As(err, &inErr) {
		return 0, 0, fmt.Errorf("%s: %w", op, inErr.err)
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return 0, 0, translate(ctx, op, err)
	}
	return resp.GetFiles(), resp.GetBytes(), nil
}
