package guestproto

import (
	"io/fs"
	"syscall"
)

// UnixMode converts the permission part of an fs.FileMode to the Unix mode bits the
// protocol's mode fields carry.
func UnixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= syscall.S_ISVTX
	}
	return u
}

// FileMode converts a protocol mode field's Unix bits to an fs.FileMode, or def when
// they are zero.
func FileMode(u uint32, def fs.FileMode) fs.FileMode {
	if u&0o7777 == 0 {
		return def
	}
	m := fs.FileMode(u & 0o777)
	if u&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if u&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if u&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
