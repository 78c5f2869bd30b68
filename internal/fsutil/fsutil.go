// Package fsutil opens the files bankml reads (models, manifests) safely:
// only regular files, and never blocking on a FIFO or a device; and writes
// the files it makes (models) atomically, through a temporary file renamed
// into place (WriteAtomic).
package fsutil

import (
	"fmt"
	"os"
	"syscall"
)

// OpenRegular opens path read-only and returns it only if it is a regular
// file. The open is non-blocking (O_NONBLOCK), so a FIFO without a writer or
// a device node is refused instead of hanging; on regular files the flag
// changes nothing. The error is an *os.PathError naming the path, the
// operation and, for other file types, "not a regular file (<type>)"; for a
// directory "not a regular file: is a directory", wrapping syscall.EISDIR.
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
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file (%s)", st.Mode().Type())}
	}
	return f, nil
}
