package serve

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/guard"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/tokenizer"
)

// ErrRefused is wrapped by Admit's error when the model must not be served: the guard does not play it, its
// architecture has no graph, its pin is refused, or it is unpinned without AdmitOptions.Unpinned. bankml serve
// exits with status 2 on it, before the port opens.
var ErrRefused = errors.New("refused")

// AdmitOptions configure Admit.
type AdmitOptions struct {
	Manifest string    // FORK.json path or a sha256 digest (provenance.Pin); "" for none
	Unpinned bool      // allow a model without a pin (every receipt then says pinned: false)
	Progress io.Writer // receives the file's bytes as they are hashed (a progress bar); may be nil
}

// Model is an admitted model: the three gates passed (guard, architecture, pin), the file loaded, and its
// identity recorded for the per-answer re-check.
type Model struct {
	Path      string              // the file as given
	Name      string              // the file's base name: the id of /v1/models
	File      *gguf.File          // the memory-mapped GGUF file (metadata, tensors)
	Model     *model.Model        // the loaded weights (views into File)
	Tokenizer tokenizer.Tokenizer // the model's tokenizer
	Template  *chat.Template      // the chat template (ChatML when the file has none, as llama-server)
	Guard     *guard.Report       // the guard's report at admission (Verdict play)
	// MainlineRefusal is why mainline llama.cpp would refuse the file when it was admitted for engine bankml
	// (PTQTP trit-planes, guard.FileForBankml); empty otherwise.
	MainlineRefusal string
	Pin             provenance.Result // the pin (Pinned false when admitted with Unpinned)
	SHA256          string            // the file's sha256 (lower-case hex)
	Identity        FileIdentity      // the file's identity after it was hashed, re-checked before every answer
}

// Admit guards, pins and loads the model at path, in the order of bankml run: the header guard
// (guard.File for mainline, as bankml run), the architecture registry (model.CheckArchitecture), the sha256 pin
// (provenance.Pin), then model.Load, the tokenizer and the chat template. The file's identity is taken
// before hashing and checked again after, so a file that changed while it was hashed is refused. Errors
// wrap ErrRefused when the model must not be served, and are I/O errors otherwise.
func Admit(path string, o AdmitOptions) (*Model, error) {
	before, err := StatIdentity(path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	// mainline's rules, and engine bankml's for a PTQTP file, as bankml run judges
	rep, mainline, err := guard.FileForBankml(path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if rep.Verdict != guard.Play {
		return nil, fmt.Errorf("serve: %s: %w: %w", path, ErrRefused, rep.Err())
	}
	f, err := gguf.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
			return nil, fmt.Errorf("serve: %w", err)
		}
		return nil, fmt.Errorf("serve: %w: %w", ErrRefused, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	if err := model.CheckArchitecture(f); err != nil {
		return nil, fmt.Errorf("serve: %s: %w: %w", path, ErrRefused, err)
	}
	pin, err := provenance.Pin(path, o.Manifest, o.Progress)
	switch {
	case errors.Is(err, provenance.ErrRefused):
		return nil, fmt.Errorf("serve: %w: %w", ErrRefused, err)
	case err != nil:
		return nil, fmt.Errorf("serve: %w", err)
	case !pin.Pinned && !o.Unpinned:
		return nil, fmt.Errorf("serve: %s (sha256 %s) has no pin: %w (give --manifest FORK.json or its digest, or --unpinned to serve it with receipts saying pinned: false)", path, pin.SHA256, ErrRefused)
	}
	after, err := StatIdentity(path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if d := before.Diff(after); d != "" {
		return nil, fmt.Errorf("serve: %s: %w: %s while it was verified", path, ErrRefused, d)
	}
	m, err := model.LoadBackground(f)
	if err != nil {
		return nil, fmt.Errorf("serve: %w: %w", ErrRefused, err)
	}
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("serve: %s: %w: %w", path, ErrRefused, err)
	}
	if tok.NVocab() != m.HP.NVocab {
		return nil, fmt.Errorf("serve: %s: %w: tokenizer has %d tokens, token_embd.weight %d rows", path, ErrRefused, tok.NVocab(), m.HP.NVocab)
	}
	tmpl, err := chat.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("serve: %s: %w: %w", path, ErrRefused, err)
	}
	ok = true
	m2 := &Model{
		Path: path, Name: pin.Name, File: f, Model: m, Tokenizer: tok, Template: tmpl,
		Guard: rep, Pin: pin, SHA256: pin.SHA256, Identity: after,
	}
	if mainline != nil {
		m2.MainlineRefusal = mainline.Reason
	}
	return m2, nil
}

// Close stops the model's background packing (model.Model.Close) and
// releases its mapping.
func (m *Model) Close() error {
	m.Model.Close()
	return m.File.Close()
}

// Recheck is the per-answer re-check: it returns nil when the model file still has the identity it was
// verified with, else a 503 unavailable_error *APIError naming what changed. Every route that answers with
// the model calls it before generating (Server.recheck).
func (m *Model) Recheck() error {
	got, err := StatIdentity(m.Path)
	if err != nil {
		return &APIError{Type: TypeUnavailable, Message: fmt.Sprintf("model file re-check failed: %v: no answer", err)}
	}
	if d := m.Identity.Diff(got); d != "" {
		return &APIError{Type: TypeUnavailable, Message: "model file re-check failed: " + d + ": no answer"}
	}
	return nil
}
