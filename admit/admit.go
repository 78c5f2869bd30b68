package admit

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
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/tokenizer"
)

// ErrRefused is wrapped by Open's error when the model must not run: the guard does not play it, no graph
// runs its architecture, its heads do not fit Options.CacheTypes, its pin is refused (or missing under
// RequirePin), it changed while it was hashed, or its weights, tokenizer, suppressed tokens or (with
// Options.Chat) chat template cannot be loaded.
var ErrRefused = errors.New("refused")

// Error is every error of Open. Refused says the model must not run (bankml exits 2, serve does not
// listen); otherwise reading the file failed, or Options.Manifest is a malformed digest (exit 1).
type Error struct {
	Path    string // the model file as given
	Refused bool
	Err     error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrRefused) hold for a refusal.
func (e *Error) Is(target error) bool { return target == ErrRefused && e.Refused }

// NoPinError is Open's refusal (Error.Refused) of a file without a pin under RequirePin: the file and its
// sha256, for a caller that tells the user how to pin it.
type NoPinError struct {
	Path   string
	SHA256 string
}

func (e *NoPinError) Error() string {
	return fmt.Sprintf("%s (sha256 %s) has no pin: refused (give --manifest FORK.json or its digest, or --unpinned to serve it with receipts saying pinned: false)", e.Path, e.SHA256)
}

// PinPolicy says what Open does with a file that has no pin.
type PinPolicy int

const (
	// RequirePin refuses a file without a pin (bankml serve without --unpinned).
	RequirePin PinPolicy = iota
	// AllowUnpinned admits it, hashed, with Model.Pin.Pinned false (bankml run and perplexity, which say so;
	// serve --unpinned, whose receipts say pinned: false).
	AllowUnpinned
)

// Options configure Open.
type Options struct {
	// Manifest is the pin: a FORK.json path, a sha256 (64 hex digits) or "sha256:<hex>" (provenance.Pin);
	// "" for none.
	Manifest string
	// Pin is what a file without a pin gets (RequirePin, the zero value, refuses it).
	Pin PinPolicy
	// Chat reads the chat template (chat.FromGGUF: ChatML when the file has none, as llama-server); a
	// template it refuses refuses the model. Without it Model.Template is nil.
	Chat bool
	// Progress receives the file's bytes as they are hashed (a progress bar); may be nil.
	Progress io.Writer
	// CacheTypes, when not nil, are the KV cache types the model is to run with (-ctk/-ctv): checked from
	// the header (model.CheckFileCacheTypes) before the file is hashed, so that types its heads do not fit
	// refuse it before any expensive work.
	CacheTypes *model.CacheTypes
	// Header, when not nil, checks the caller's settings against the model's hyperparameters, read from the
	// header (model.FileHparams) before the file is hashed; its error refuses the model (serve's -c and -np
	// against the training context).
	Header func(model.Hparams) error
}

// Model is an admitted model: every gate passed, the file loaded.
type Model struct {
	Path      string              // the file as given
	Name      string              // the file's base name (the id of serve's /v1/models)
	File      *gguf.File          // the memory-mapped GGUF file (metadata, tensors)
	Model     *model.Model        // the loaded weights (views into File; packed copies built in the background)
	Tokenizer tokenizer.Tokenizer // the model's tokenizer (its vocabulary has token_embd's rows)
	Template  *chat.Template      // the chat template (Options.Chat), else nil
	// SuppressTokens are the file's tokenizer.ggml.suppress_tokens (sample.SuppressTokens), banned in every
	// sampler chain; nil when it has none.
	SuppressTokens []int32
	Guard          *guard.Report // the guard's report (Verdict play)
	// MainlineRefusal is why mainline llama.cpp would refuse the file when it was admitted for engine bankml
	// (PTQTP trit-planes: guard.FileForBankml); "" otherwise.
	MainlineRefusal string
	Pin             provenance.Result // the pin (Pinned false when admitted with AllowUnpinned and no pin)
	SHA256          string            // the file's sha256, lower-case hex
	Identity        FileIdentity      // the file's identity when it was hashed (serve re-checks it per answer)
}

// Open admits the model file at path as the package doc describes and returns it loaded; the caller
// closes it. Every error is an *Error (Refused, or I/O).
func Open(path string, o Options) (*Model, error) {
	ioErr := func(err error) error { return &Error{Path: path, Err: err} }
	refused := func(err error) error { return &Error{Path: path, Refused: true, Err: err} }

	rep, mainline, err := guard.FileForBankml(path)
	if err != nil {
		return nil, ioErr(err)
	}
	if rep.Verdict != guard.Play {
		return nil, refused(rep.Err())
	}
	// The identity the hash is of: taken before the file is mapped and hashed, checked again after.
	before, err := StatIdentity(path)
	if err != nil {
		return nil, ioErr(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
			return nil, ioErr(err)
		}
		return nil, refused(err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	// The architecture is refused from the header, before the pin reads the whole file.
	if err := model.CheckArchitecture(f); err != nil {
		return nil, refused(fmt.Errorf("%s: %w", path, err))
	}
	if o.CacheTypes != nil {
		if err := model.CheckFileCacheTypes(f, *o.CacheTypes); err != nil {
			return nil, refused(fmt.Errorf("%s: %w", path, err))
		}
	}
	if o.Header != nil {
		hp, err := model.FileHparams(f)
		if err == nil {
			err = o.Header(hp)
		}
		if err != nil {
			return nil, refused(fmt.Errorf("%s: %w", path, err))
		}
	}
	pin, err := provenance.Pin(path, o.Manifest, o.Progress)
	switch {
	case errors.Is(err, provenance.ErrRefused):
		return nil, refused(err)
	case err != nil:
		return nil, ioErr(err)
	case !pin.Pinned && o.Pin == RequirePin:
		return nil, refused(&NoPinError{Path: path, SHA256: pin.SHA256})
	}
	after, err := StatIdentity(path)
	if err != nil {
		return nil, ioErr(err)
	}
	if d := before.Diff(after); d != "" {
		return nil, refused(fmt.Errorf("%s: refused: %s while it was hashed", path, d))
	}
	m, err := model.LoadBackground(f)
	if err != nil {
		return nil, refused(err)
	}
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, refused(fmt.Errorf("%s: %w", path, err))
	}
	if tok.NVocab() != m.HP.NVocab {
		return nil, refused(fmt.Errorf("%s: tokenizer has %d tokens, token_embd.weight %d rows", path, tok.NVocab(), m.HP.NVocab))
	}
	suppress, err := sample.SuppressTokens(f, m.HP.NVocab)
	if err != nil {
		return nil, refused(fmt.Errorf("%s: %w", path, err))
	}
	var tmpl *chat.Template
	if o.Chat {
		if tmpl, err = chat.FromGGUF(f); err != nil {
			return nil, refused(fmt.Errorf("%s: %w", path, err))
		}
	}
	ok = true
	am := &Model{
		Path: path, Name: pin.Name, File: f, Model: m, Tokenizer: tok, Template: tmpl, SuppressTokens: suppress,
		Guard: rep, Pin: pin, SHA256: pin.SHA256, Identity: after,
	}
	if mainline != nil {
		am.MainlineRefusal = mainline.Reason
	}
	return am, nil
}

// Close stops the model's background packing (model.Model.Close) and releases the file's mapping.
func (m *Model) Close() error {
	m.Model.Close()
	return m.File.Close()
}
