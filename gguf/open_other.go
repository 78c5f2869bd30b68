//go:build !linux

package gguf

import (
	"fmt"
	"os"
)

// Open reads the whole file at path into memory and parses it (this build has no memory map). Errors are those of
// Parse, prefixed with the path, DirectoryError, or os errors.
func Open(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, DirectoryError(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
