// Package fsutil opens the files bankml reads (models, manifests) safely, only regular files and never blocking
// on a FIFO or a device, and writes the files it makes (models) atomically.
//
// # Design record
//
// What. [OpenRegular] opens a file read-only with O_NONBLOCK and refuses anything that is not a regular file,
// naming its type (a directory wraps syscall.EISDIR; [Kind] names a type as a user says it). [WriteAtomic]
// writes through a temporary file in the same folder, renamed into place only when the write succeeded and the
// context is not done; on any error the temporary file is removed and the path left as it was, and an error
// names the path and its folder, never the temporary file.
//
// Follows. POSIX open(2) and rename(2): a non-blocking open of a FIFO without a writer returns at once, and a
// rename within one folder replaces the target in one step.
//
// Deliberate differences. Off unix there is no O_NONBLOCK (nonblock_other.go): the file type is still checked
// after the open.
//
// Determinism. No state: every call depends only on its arguments and the file system.
package fsutil

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Kind names the type of a file for a message, as a user would say it: "a directory", "a symbolic link", "a
// named pipe (FIFO)", "a socket", "a character device", "a block device", "an irregular file" or "a regular
// file" (never FileMode's "d---------").
func Kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t != 0:
		return "an irregular file"
	}
	return "a regular file"
}

// OpenRegular opens path read-only and returns it only if it is a regular
// file. The open is non-blocking (O_NONBLOCK), so a FIFO without a writer or
// a device node is refused instead of hanging; on regular files the flag
// changes nothing. The error is an *os.PathError naming the path, the
// operation and, for other file types, "not a regular file: it is <Kind>"; for
// a directory "not a regular file: is a directory", wrapping syscall.EISDIR.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		if st.IsDir() { // errors.Is(err, syscall.EISDIR) holds, for callers that say what they expected
			return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file: %w", syscall.EISDIR)}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file: it is %s", Kind(st.Mode()))}
	}
	return f, nil
}
