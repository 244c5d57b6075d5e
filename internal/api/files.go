package api

import (
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// FileInfo is wire.FileInfo.
type FileInfo = wire.FileInfo

// filePath reads the path and root query parameters. Paths are absolute sandbox paths;
// the root, "/" unless given, is the directory no resolution may leave.
func filePath(r *http.Request) (root, p string, err error) {
	q := r.URL.Query()
	root, p = q.Get("root"), q.Get("path")
	if root == "" {
		root = "/"
	}
	if p == "" || !path.IsAbs(p) || !path.IsAbs(root) {
		return "", "", apperr.Invalid("", "path and root must be absolute sandbox paths, got path %q root %q", p, root)
	}
	return root, p, nil
}

// fileTarget reads a file route's paths and connects to the sandbox's guest; on failure
// it has answered the request and ok is false.
func (s *Server) fileTarget(w http.ResponseWriter, r *http.Request) (c *guestclient.Client, root, p string, ok bool) {
	root, p, err := filePath(r)
	if err == nil {
		c, err = s.svc.Client(r.Context(), r.PathValue("name"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, "", "", false
	}
	return c, root, p, true
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	c, root, p, ok := s.fileTarget(w, r)
	if !ok {
		return
	}
	// Stat first so that a missing file is a clean 404 rather than a broken body.
	fi, err := c.Stat(r.Context(), root, p)
	if err != nil {
		s.writeError(w, r, fileError(p, err))
		return
	}
	if fi.Type == "dir" {
		s.writeError(w, r, apperr.Invalid("copy a directory with the tar route", "%s is a directory", p))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size, 10))
	n, err := c.ReadFile(r.Context(), root, p, w)
	if err != nil {
		s.log.Warn("read file", "path", p, "err", err)
	}
	s.flight(r.Context(), r.PathValue("name"), flightrec.KindCopyOut, map[string]string{"path": p, "root": root, "bytes": strconv.FormatInt(n, 10)})
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	mode := fs.FileMode(0o644)
	if m := r.URL.Query().Get("mode"); m != "" {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil {
			s.writeError(w, r, apperr.Invalid("", "bad mode %q: give octal permission bits like 644", m))
			return
		}
		mode = fs.FileMode(v).Perm()
	}
	c, root, p, ok := s.fileTarget(w, r)
	if !ok {
		return
	}
	n, err := c.WriteFile(r.Context(), root, p, mode, r.URL.Query().Get("parents") == "true", r.Body)
	if err != nil {
		s.writeError(w, r, fileError(p, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"size": n})
}

func (s *Server) statFile(w http.ResponseWriter, r *http.Request) {
	c, root, p, ok := s.fileTarget(w, r)
	if !ok {
		return
	}
	fi, err := c.Stat(r.Context(), root, p)
	if err != nil {
		s.writeError(w, r, fileError(p, err))
		return
	}
	writeJSON(w, http.StatusOK, FileInfo{Name: fi.Name, Size: fi.Size, Mode: fi.Mode, Type: fi.Type, Link: fi.Link, MTime: fi.MtimeUnixNano})
}

func (s *Server) tarOut(w http.ResponseWriter, r *http.Request) {
	c, root, p, ok := s.fileTarget(w, r)
	if !ok {
		return
	}
	if _, err := c.Stat(r.Context(), root, p); err != nil {
		s.writeError(w, r, fileError(p, err))
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	cw := &countingWriter{ResponseWriter: w}
	defer func() {
		s.flight(r.Context(), r.PathValue("name"), flightrec.KindCopyOut, map[string]string{"path": p, "root": root, "tar_bytes": strconv.FormatInt(cw.n, 10)})
	}()
	if err := c.TarOut(r.Context(), root, p, cw); err != nil {
		// Headers are gone; cutting the stream short makes the client's tar reader fail.
		s.log.Warn("tar out", "path", p, "err", err)
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) tarIn(w http.ResponseWriter, r *http.Request) {
	c, root, p, ok := s.fileTarget(w, r)
	if !ok {
		return
	}
	files, n, err := c.TarIn(r.Context(), root, p, io.Reader(r.Body))
	if err != nil {
		s.writeError(w, r, fileError(p, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"files": files, "bytes": n})
}

// fileError gives a file error a kind the CLI can explain.
func fileError(p string, err error) error {
	switch {
	case apperr.KindOf(err) != apperr.KindInternal:
		return err
	case isNotExist(err):
		return apperr.NotFound("", "%s: no such file or directory in the sandbox", p)
	case isEscape(err):
		return apperr.Invalid("", "%s: %v", p, err)
	}
	return err
}
