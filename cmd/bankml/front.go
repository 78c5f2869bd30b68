package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/store"
)

// openModel admits the model at path through the front door (admit.Open) for command cmd: a progress
// bar on a terminal while the file is hashed, then, on info, the note when the file was admitted for
// engine bankml only (PTQTP trit-planes) and the admission line. A refusal is exit status 2, any other
// error (I/O) 1; errors are prefixed with cmd ("run: guard: open …"). When the model was given by name, stored
// is its manifest (storeModel; path is then the store's file for it) and errors name the model, NAME:TAG, not
// that file (store.Manifest.Named); nil for a file given by its path. The caller closes the model.
func openModel(cmd, path string, stored *store.Manifest, o admit.Options, stderr errWriter, info io.Writer) (*admit.Model, error) {
	progress, done := io.Writer(nil), func() {}
	if info != io.Discard { // --log-disable: no progress bar either
		progress, done = progressFor(stderr, path)
	}
	o.Progress = progress
	m, err := admit.Open(path, o)
	done()
	if err != nil {
		err = fmt.Errorf("%s: %w", cmd, err)
		if stored != nil {
			err = &namedError{msg: stored.Named(err.Error(), path, stored.Ref()), err: err}
		}
		if errors.Is(err, admit.ErrRefused) {
			return nil, cannotRun(err)
		}
		return nil, err
	}
	if m.MainlineRefusal != "" {
		fmt.Fprintf(info, "note: %s: PTQTP trit-planes: mainline llama.cpp would refuse this file; admitted for engine bankml, which sums the planes (bankml guard FILE says why)\n", cmd)
	}
	pin := m.Pin.Verdict
	if !m.Pin.Pinned && o.Pin == admit.AllowUnpinned && cmd == "serve" {
		pin = "UNPINNED (--unpinned: receipts say pinned: false)"
	}
	fmt.Fprintf(info, "admitted: guard %s (%s), sha256 %s, %s\n", m.Guard.Verdict, m.Guard.Engine, m.SHA256, pin)
	return m, nil
}

// namedError reads as msg, the error err's text with the model named as the user named it, and wraps err (its
// exit status and kind stay err's).
type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }

// openGGUF opens the GGUF file at path for command cmd where a command reads the file without admitting it
// (inspect, tokenize, chat-template, quantize, bench serve), with openModel's exit statuses: 1 when the file
// cannot be read (missing, unreadable: I/O), 2 when it reads but is no valid GGUF file (malformed, truncated).
// Errors are prefixed with cmd.
func openGGUF(cmd, path string) (*gguf.File, error) {
	f, err := gguf.Open(path)
	if err != nil {
		err = fmt.Errorf("%s: %w", cmd, err)
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
			return nil, err
		}
		return nil, cannotRun(err)
	}
	return f, nil
}
