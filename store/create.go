package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/parser"

	"github.com/bankml/bankml/catalog"
)

// CreateOptions configure Create.
type CreateOptions struct {
	Dir  string      // the Modelfile's folder: a relative FROM path is read from there
	Path string      // the Modelfile's path, recorded in the provenance ("" for one sent over HTTP)
	Pull PullOptions // how a FROM naming a catalog model not in the store is pulled
	// CheckParameters, if set, refuses PARAMETERs bankml cannot apply (bankml serve checks them as it
	// checks a request's Ollama options), with the reason.
	CheckParameters func(map[string]any) error
	// Warn receives a line for each setting Ollama itself ignores with a warning (deprecated parameters).
	Warn func(string)
}

// deprecatedParameters are the PARAMETERs Ollama v0.17.4's parser ignores with a warning
// (parser/parser.go's deprecatedParameters).
var deprecatedParameters = []string{
	"penalize_newline", "low_vram", "f16_kv", "logits_all", "vocab_only", "use_mlock", "mirostat", "mirostat_tau", "mirostat_eta",
}

// Refusals of Modelfile commands bankml does not carry out, with the reason.
const (
	refuseTemplate = "TEMPLATE is refused: it is a Go template Ollama renders; bankml renders the model's own chat template " +
		"(tokenizer.chat_template, Jinja, byte-identical to llama.cpp's rendering), and an override would have no reference to be proven against"
	refuseAdapter = "ADAPTER is refused: bankml does not apply LoRA adapters (only a GGUF model's own weights, proven against llama.cpp); merge the adapter into the model first"
	refuseParser  = "is refused: Ollama's built-in renderers and output parsers are not bankml's; bankml renders the model's own chat template"
)

// unterminated gives Ollama's parser's bare "unexpected EOF" (a Modelfile that ends inside a command: a
// quoted value never closed, or a command with no value) the line that command starts on, which the parser
// does not say. The line is found with the parser itself: the command open at the end is the one after the
// longest run of whole lines that parses without that error. Other errors are returned as they are.
func unterminated(text []byte, err error) error {
	if err != io.ErrUnexpectedEOF { // the parser's other EOF errors are wrapped and come mid-file
		return err
	}
	lines := bytes.SplitAfter(text, []byte("\n"))
	start := 0 // the 0-based line the open command starts on
	for n := len(lines) - 1; n > 0; n-- {
		if _, perr := parser.ParseFile(bytes.NewReader(bytes.Join(lines[:n], nil))); perr != io.ErrUnexpectedEOF {
			start = n
			break
		}
	}
	line := string(bytes.TrimRight(lines[start], "\r\n"))
	switch fields := strings.Fields(line); {
	case strings.Contains(line, `"""`):
		return fmt.Errorf(`line %d: the """ string begun there is never closed (%s): %w`, start+1, clip(line), err)
	case strings.Contains(line, `"`):
		return fmt.Errorf(`line %d: the " string begun there is never closed (%s): %w`, start+1, clip(line), err)
	case len(fields) > 0:
		return fmt.Errorf("line %d: %s has no value: %w", start+1, strings.ToUpper(fields[0]), err)
	}
	return fmt.Errorf("line %d: %w", start+1, err)
}

// clip is a line cut to 40 bytes for an error message.
func clip(line string) string {
	if len(line) > 40 {
		return line[:40] + "…"
	}
	return line
}

// Create makes the model ref (NAME[:TAG]) from an Ollama Modelfile, as `ollama create NAME -f Modelfile`:
// FROM names a store model (whose settings it inherits), a catalog model (pulled when the store lacks it)
// or a GGUF file (copied into the store and hashed: its pin is that sha256); PARAMETER sets an Ollama option
// (api.Options' names, typed by api.FormatParams: a repeated "stop" adds, another repeated one replaces);
// SYSTEM the default system prompt; MESSAGE a conversation put before every chat; LICENSE adds a licence
// text. TEMPLATE, ADAPTER, RENDERER, PARSER and REQUIRES are refused with the reason. Errors name the
// command at fault; nothing is written unless the whole Modelfile is accepted.
func (s *Store) Create(ctx context.Context, ref string, modelfile io.Reader, o CreateOptions) (*Manifest, error) {
	name, tag, err := catalog.ParseRef(ref)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	text, err := io.ReadAll(modelfile)
	if err != nil {
		return nil, fmt.Errorf("store: Modelfile: %w", err)
	}
	mf, err := parser.ParseFile(bytes.NewReader(text))
	if err != nil {
		return nil, refuseModelfile(fmt.Errorf("store: Modelfile: %w", unterminated(text, err)))
	}
	var (
		from     string
		params   = map[string]any{}
		system   *string
		messages []Message
		licenses []string
	)
	for _, c := range mf.Commands {
		switch c.Name {
		case "model":
			if from != "" {
				return nil, refuseModelfile(fmt.Errorf("store: Modelfile: FROM %s: a second FROM (bankml serves one GGUF file per model)", c.Args))
			}
			from = c.Args
		case "adapter":
			return nil, refuseModelfile(fmt.Errorf("store: Modelfile: %s", refuseAdapter))
		case "template":
			return nil, refuseModelfile(fmt.Errorf("store: Modelfile: %s", refuseTemplate))
		case "renderer", "parser":
			return nil, refuseModelfile(fmt.Errorf("store: Modelfile: %s %s", strings.ToUpper(c.Name), refuseParser))
		case "requires":
			return nil, refuseModelfile(fmt.Errorf("store: Modelfile: REQUIRES %s is refused: it names a minimum Ollama version, and bankml is not Ollama", c.Args))
		case "system":
			v := c.Args
			system = &v
		case "license":
			licenses = append(licenses, c.Args)
		case "message":
			role, content, _ := strings.Cut(c.Args, ": ")
			messages = append(messages, Message{Role: role, Content: content})
		default:
			if slices.Contains(deprecatedParameters, c.Name) {
				if o.Warn != nil {
					o.Warn(fmt.Sprintf("PARAMETER %s is deprecated and ignored (as Ollama ignores it)", c.Name))
				}
				continue
			}
			ps, err := api.FormatParams(map[string][]string{c.Name: {c.Args}})
			if err != nil {
				return nil, refuseModelfile(fmt.Errorf("store: Modelfile: PARAMETER %s %s: %w", c.Name, c.Args, err))
			}
			for k, v := range ps { // Ollama's CreateRequest merge: "stop" lists add up, others replace
				if ks, ok := params[k].([]string); ok {
					if vs, ok := v.([]string); ok {
						params[k] = append(ks, vs...)
						continue
					}
				}
				params[k] = v
			}
		}
	}
	if from == "" {
		return nil, refuseModelfile(errors.New("store: Modelfile: no FROM: name a model in the store, a catalog model or a GGUF file"))
	}
	m, err := s.base(ctx, from, o)
	if err != nil {
		return nil, err
	}
	merged := map[string]any{}
	for k, v := range m.Parameters {
		merged[k] = v
	}
	for k, v := range params {
		merged[k] = v
	}
	if o.CheckParameters != nil && len(merged) > 0 {
		if err := o.CheckParameters(merged); err != nil {
			return nil, refuseModelfile(fmt.Errorf("store: Modelfile: PARAMETER: %w", err))
		}
	}
	if len(merged) == 0 {
		merged = nil
	}
	m.Name, m.Tag, m.Parameters, m.Modified = name, tag, merged, time.Now().UTC()
	if system != nil {
		m.System = *system
	}
	if messages != nil {
		m.Messages = messages
	}
	if licenses != nil {
		m.License = licenses
	}
	m.Provenance.Kind, m.Provenance.From, m.Provenance.Path, m.Provenance.Added = "create", from, o.Path, time.Now().UTC()
	if err := s.Put(m); err != nil {
		return nil, err
	}
	return m, nil
}

// base is the manifest FROM starts from: a store model's (a copy), a catalog model's (pulled when missing),
// or a fresh one over a GGUF file.
func (s *Store) base(ctx context.Context, from string, o CreateOptions) (*Manifest, error) {
	file := from
	if strings.HasPrefix(file, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			file = filepath.Join(home, file[2:])
		}
	} else if !filepath.IsAbs(file) && o.Dir != "" {
		file = filepath.Join(o.Dir, file)
	}
	st, serr := os.Stat(file)
	if serr == nil && !st.IsDir() {
		b, prov, err := s.addFile(ctx, file, "", o.Pull.Fetch)
		if err != nil {
			return nil, fmt.Errorf("store: Modelfile: FROM %s: %w", from, err)
		}
		if err := s.checkGGUF(b); err != nil { // as a pull of the file: refused before any manifest names it
			return nil, fmt.Errorf("store: Modelfile: FROM %s: %w", from, err)
		}
		return &Manifest{Model: b, Provenance: prov}, nil
	}
	if _, _, err := catalog.ParseRef(from); err != nil {
		if serr == nil {
			return nil, folderError("store: Modelfile: FROM ", from)
		}
		return nil, &wrapError{fmt.Sprintf("store: Modelfile: FROM %s: no such file, and not a model name", from), ErrNotFound}
	}
	m, _, err := s.Resolve(ctx, from, o.Pull)
	var nf *NotFoundError
	if errors.As(err, &nf) { // one sentence naming the model once, as written (nf names it again, as NAME:TAG)
		return nil, &fromNotFoundError{from: from, nf: nf}
	}
	if err != nil { // "store: Modelfile: FROM NAME: pull NAME:TAG: why": the store's "store: " said once
		return nil, &wrapError{fmt.Sprintf("store: Modelfile: FROM %s: %s", from, strings.TrimPrefix(err.Error(), "store: ")), err}
	}
	c := *m
	return &c, nil
}

// fromNotFoundError is Create's error for a FROM that is no file, no model of the store and no catalog
// model: one sentence naming it once, as the Modelfile wrote it. It wraps Resolve's *NotFoundError (and so
// ErrNotFound).
type fromNotFoundError struct {
	from string
	nf   *NotFoundError
}

func (e *fromNotFoundError) Error() string {
	return fmt.Sprintf("store: Modelfile: FROM %s: not a file, not in the store %s, and not in bankml's catalog (it has %s)",
		e.from, e.nf.Root, strings.Join(e.nf.Catalog, ", "))
}

func (e *fromNotFoundError) Unwrap() error { return e.nf }
