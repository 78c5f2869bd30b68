package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteAtomic writes the file at path through a temporary file in the same folder ("."+base+".*.tmp"), renamed into
// place with mode 0644 only once write has returned nil, so that path never holds a partial file. On any error, and
// when ctx is done (every write through the io.Writer then fails with an error wrapping ctx's, and a write that
// ignored that still does not rename), the temporary file is removed and path is left as it was. It returns the
// size of the file written. The caller checks what may be replaced at path (WriteAtomic renames over any file).
func WriteAtomic(ctx context.Context, path string, write func(w io.Writer) error) (size int64, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, createError(path, dir, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(ctxWriter{ctx, f}); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("stopped: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if err := f.Chmod(0o644); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return 0, err
	}
	return st.Size(), nil
}

// createError is WriteAtomic's error when the temporary file beside path cannot be made: it names path and
// its folder dir, not the temporary file's name, which the caller never gave (a missing folder: "cannot write
// PATH: the folder DIR does not exist"), and wraps the cause.
func createError(path, dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot write %s: the folder %s does not exist: %w", path, dir, err)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("cannot write %s: %s is not a folder: %w", path, dir, err)
	}
	return fmt.Errorf("cannot write %s in the folder %s: %w", path, dir, err)
}

// ctxWriter fails every write once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("stopped: %w", err)
	}
	return c.w.Write(p)
}
