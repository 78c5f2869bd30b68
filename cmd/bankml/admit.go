package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/guard"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/tokenizer"
)

// admit is the admission of a model file before it runs (issue 3): the
// header guard, the architecture registry, then the sha256 pin against
// manifest. The guard judges for mainline llama.cpp; a file it refuses only
// for PTQTP trit-planes is judged again for engine bankml (bankml's loader
// reads them, package ternary) and admitted when that plays, with a note on
// stderr that mainline would refuse it. A file the guard does not play, or
// whose architecture no graph runs, cannot run (exit 2); I/O errors exit 1.
// cmd prefixes every error ("run: guard: open …"). The caller closes the returned file.
func admit(cmd, path, manifest string, stderr errWriter) (*gguf.File, error) {
	rep, mainline, err := guard.FileForBankml(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err) // I/O: exit 1
	}
	if mainline != nil {
		fmt.Fprintf(stderr, "note: %s: mainline llama.cpp would refuse this file (%s); admitted for engine bankml, whose loader sums the planes\n",
			cmd, mainline.Reason)
	}
	if rep.Verdict != guard.Play {
		return nil, cannotRun(fmt.Errorf("%s: %w", cmd, rep.Err()))
	}
	f, err := gguf.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
			return nil, fmt.Errorf("%s: %w", cmd, err) // I/O: exit 1
		}
		return nil, cannotRun(fmt.Errorf("%s: %w", cmd, err))
	}
	// The architecture is refused from the header, before the pin reads
	// the whole file.
	if err := model.CheckArchitecture(f); err != nil {
		f.Close()
		return nil, cannotRun(fmt.Errorf("%s: %w", cmd, err))
	}
	progress, done := progressFor(stderr, path)
	pin, err := provenance.Pin(path, manifest, progress)
	done()
	switch {
	case errors.Is(err, provenance.ErrRefused):
		f.Close()
		return nil, cannotRun(fmt.Errorf("%s: %w", cmd, err))
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	fmt.Fprintf(stderr, "admitted: guard %s (%s), sha256 %s, %s\n", rep.Verdict, rep.Engine, pin.SHA256, pin.Verdict)
	return f, nil
}

// loadModel binds an admitted file's model and tokenizer, refusing (exit 2)
// what Load or the tokenizer refuse and a vocabulary whose size is not
// token_embd's rows. cmd names the command in errors.
func loadModel(cmd string, f *gguf.File) (*model.Model, tokenizer.Tokenizer, error) {
	m, err := model.LoadBackground(f)
	if err != nil {
		return nil, nil, cannotRun(fmt.Errorf("%s: %w", cmd, err))
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		m.Close()
		return nil, nil, cannotRun(fmt.Errorf("%s: %w", cmd, err))
	}
	if tok.NVocab() != m.HP.NVocab {
		m.Close()
		return nil, nil, cannotRun(fmt.Errorf("%s: tokenizer has %d tokens, token_embd.weight %d rows", cmd, tok.NVocab(), m.HP.NVocab))
	}
	return m, tok, nil
}
