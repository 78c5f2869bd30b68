// Package fsutil opens the files bankml reads (models, manifests) safely, only regular files and never blocking
// on a FIFO or a device, and writes the files it makes (models) atomically.
//
// # Design record
//
// What. [OpenRegular] opens a file read-only with O_NONBLOCK and refuses anything that is not a regular file,
// naming its type (a directory wraps syscall.EISDIR). [WriteAtomic] writes through a temporary file in the
// same folder, renamed into place only when the write succeeded and the context is not done; on any error the
// temporary file is removed and the path left as it was.
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
