package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/bankml/bankml/provenance"
)

// sha256Cmd prints the sha256 of files, in sha256sum's format.
type sha256Cmd struct {
	Files []string `arg:"" name:"FILE" help:"Files to hash; - for standard input." type:"path"`
}

// Run hashes each file and prints "<hex>  <file>" for it; "-" is standard input, as sha256sum reads it. An
// unreadable file is reported on standard error and the others are still hashed; the exit status is then 1.
func (c *sha256Cmd) Run(stdin io.Reader, stdout io.Writer, stderr errWriter) error {
	failed := 0
	var firstErr error
	for _, p := range c.Files {
		var sum string
		var err error
		if p == "-" {
			if sum, _, err = provenance.HashReader(stdin, nil); err != nil {
				err = fmt.Errorf("sha256: standard input: %w", err)
			}
		} else {
			bar, done := progressFor(stderr, p)
			sum, err = provenance.SHA256File(p, bar)
			done()
		}
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			if len(c.Files) > 1 {
				fmt.Fprintln(stderr, "bankml:", err)
			}
			continue
		}
		if _, err := fmt.Fprintf(stdout, "%s  %s\n", sum, p); err != nil {
			return err
		}
	}
	switch {
	case failed == 0:
		return nil
	case len(c.Files) == 1:
		return firstErr
	default:
		return fmt.Errorf("sha256: %d of %d files could not be read", failed, len(c.Files))
	}
}

// progressMinBytes is the smallest file that gets a progress bar: below it the hash takes well under a second.
const progressMinBytes = 512 << 20

// progressFor returns a progress bar for hashing the file at p, drawn on stderr, and the function that clears it;
// or nil and a no-op when stderr is not a terminal or the file is small (or cannot be stat'ed: the hash will
// report that).
func progressFor(stderr errWriter, p string) (io.Writer, func()) {
	f, ok := io.Writer(stderr).(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() < progressMinBytes {
		return nil, func() {}
	}
	bar := progressbar.NewOptions64(st.Size(),
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription("sha256 "+filepath.Base(p)),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionUseANSICodes(true),
	)
	return bar, func() { _ = bar.Finish() }
}
