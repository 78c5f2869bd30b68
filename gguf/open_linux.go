//go:build linux

package gguf

import (
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"

	"github.com/bankml/bankml/internal/fsutil"
)

// Open maps the whole file at path read-only and shared (as llama.cpp's loader does) and parses it. The mapping
// lives until Close. If another process truncates the file while it is mapped, touching the lost pages faults;
// bankml does not defend against that. Errors are those of Parse, prefixed with the path, "<path> is a
// directory, not a GGUF file", or os errors.
func Open(path string) (*File, error) {
	fd, err := fsutil.OpenRegular(path)
	if errors.Is(err, syscall.EISDIR) {
		return nil, DirectoryError(path)
	}
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file (%s)", st.Mode().Type())}
	}
	size := st.Size()
	if size == 0 {
		_, err := Parse(nil)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: gguf: %d bytes do not fit in the address space", path, size)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	f, err := Parse(data)
	if err != nil {
		_ = syscall.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = func() error { return syscall.Munmap(data) }
	return f, nil
}
