package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"
	"github.com/ollama/ollama/format"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/bankml/bankml/catalog"
	"github.com/bankml/bankml/pull"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
)

// storeFlag is the model store's folder, shared by the store's commands (package store). It is not kong's
// type:"path", which makes an empty $BANKML_MODELS the current folder: empty, as unset, is the default (as an
// empty $OLLAMA_MODELS is Ollama's); open expands a path as kong would (~/, made absolute).
type storeFlag struct {
	Models string `name:"models" env:"BANKML_MODELS" placeholder:"DIR" help:"The model store's folder (default: $$BANKML_MODELS, else the user's data folder's bankml/models, e.g. ~/.local/share/bankml/models)."`
}

// open opens the store. Its error names the folder (store.Open) and what set it: --models or $BANKML_MODELS,
// else the default; the caller prefixes its command.
func (f storeFlag) open() (*store.Store, error) {
	root := f.Models
	if root != "" {
		root = kong.ExpandPath(root)
	} else {
		var err error
		if root, err = store.DefaultRoot(); err != nil {
			return nil, err
		}
	}
	s, err := store.Open(root)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, f.source())
	}
	return s, nil
}

// source says what named the store's folder, for an error about it.
func (f storeFlag) source() string {
	env := os.Getenv(store.EnvModels)
	switch {
	case f.Models == "":
		return "the default; --models DIR or $" + store.EnvModels + " names another"
	case env != "" && samePath(env, f.Models):
		return "from $" + store.EnvModels
	}
	return "from --models"
}

// samePath reports whether a and b name the same path once made absolute (kong makes a path flag absolute).
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// mirrorFlag is --from, where pulls read from instead of the publisher. $BANKML_MIRROR is not read here but
// by store.PullOptions.ResolvedMirror, which applies it to catalog names only: an address given explicitly
// is pulled from that address unless --from itself names a mirror.
type mirrorFlag struct {
	From string `name:"from" placeholder:"URL|DIR" help:"Read model files from a mirror instead of their publisher: an http(s) base URL or a folder serving each file under its base name (as ../shared/models does). For a catalog name $$BANKML_MIRROR does the same; an hf:// or http(s) address is read from the address itself unless --from is given. The sha256 is checked all the same."`
}

// pullOptions are store.PullOptions with a progress bar on a terminal.
func pullOptions(stderr errWriter, from string) store.PullOptions {
	return store.PullOptions{Mirror: from, Fetch: pull.Options{Progress: downloadBar(stderr)}}
}

// downloadBar draws a progress bar of a download on standard error when it is a terminal.
func downloadBar(stderr errWriter) func(total, done int64) io.Writer {
	f, ok := io.Writer(stderr).(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(total, done int64) io.Writer {
		if total <= 0 {
			total = -1
		}
		bar := progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription("pulling"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionUseANSICodes(true),
		)
		_ = bar.Set64(done)
		return bar
	}
}

// refusedPull is exit 2 for a download refused for its bytes (a wrong digest or size, not a GGUF file), 1
// otherwise (an unknown name, a missing file, I/O).
func refusedPull(err error) error {
	var de *pull.DigestError
	if errors.As(err, &de) || errors.Is(err, store.ErrNotGGUF) || strings.Contains(err.Error(), "refused:") {
		return cannotRun(err)
	}
	return err
}

// pullCmd is `bankml pull`.
type pullCmd struct {
	Model  string `arg:"" name:"MODEL" help:"A catalog name NAME[:TAG] (bankml list --catalog), an hf://OWNER/REPO[@REVISION]/FILE or http(s) address (with --sha256), or a local GGUF file."`
	SHA256 string `name:"sha256" placeholder:"HEX" help:"The sha256 the file's publisher records (Hugging Face: the file's LFS sha256); required for hf:// and http(s) addresses, checked for a local file."`
	Name   string `name:"name" placeholder:"NAME[:TAG]" help:"The name to store an address or a file under (default: the file's base name without .gguf, tag latest)."`
	mirrorFlag
	storeFlag
}

// Run pulls; its errors start "pull: ", as cp's, rm's, show's and create's start with their command.
func (c *pullCmd) Run(stdout io.Writer, stderr errWriter, sigs *signals) error {
	s, err := c.open()
	if err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := pullOptions(stderr, c.From)
	o.SHA256, o.Name = c.SHA256, c.Name
	m, err := s.Pull(ctx, c.Model, o)
	if err != nil {
		return refusedPull(fmt.Errorf("pull: %w", err)) // store.Pull's errors say what was pulled ("store: pull NAME:TAG: ...")
	}
	_, err = fmt.Fprintf(stdout, "pulled %s: sha256 %s, %d bytes (%s)\n", m.Ref(), m.Model.SHA256, m.Model.Size, m.Provenance.DigestSource)
	return err
}

// listCmd is `bankml list` (Ollama's `ollama list`).
type listCmd struct {
	Catalog bool `name:"catalog" help:"List bankml's built-in catalog (what bankml pull NAME fetches) instead of the store."`
	JSON    bool `name:"json" help:"Print JSON."`
	storeFlag
}

// Run lists; its errors start "list: ", as every store command's start with the command.
func (c *listCmd) Run(stdout io.Writer, stderr errWriter) error {
	if c.Catalog {
		all := catalog.All()
		if c.JSON {
			return writeJSON(stdout, all)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSIZE\tSOURCE\tABOUT")
		for _, e := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s@%.7s\t%s\n", e.Ref(), format.HumanBytes(e.Size), e.Repo, e.Revision, e.About)
		}
		return tw.Flush()
	}
	s, err := c.open()
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	all, err := s.List()
	var ue *store.UnreadableError
	if errors.As(err, &ue) { // as ollama list: the models that read, and a warning for each one that does not
		for _, m := range ue.Manifests {
			fmt.Fprintf(stderr, "warning: list: %s is not listed: %v\n", m.Ref, m.Err)
		}
	} else if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if c.JSON {
		if all == nil {
			all = []*store.Manifest{}
		}
		return writeJSON(stdout, all)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tSIZE\tMODIFIED")
	for _, m := range all {
		fmt.Fprintf(tw, "%s\t%.12s\t%s\t%s\n", m.Ref(), m.Model.SHA256, format.HumanBytes(m.Model.Size), format.HumanTime(m.Modified, "Never"))
	}
	return tw.Flush()
}

// showCmd is `bankml show NAME`.
type showCmd struct {
	Model     string `arg:"" name:"MODEL" help:"NAME[:TAG] in the store."`
	JSON      bool   `name:"json" help:"Print the manifest as JSON."`
	Modelfile bool   `name:"modelfile" help:"Print a Modelfile that recreates the model."`
	storeFlag
}

func (c *showCmd) Run(stdout io.Writer) error {
	s, err := c.open()
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	m, err := s.Get(c.Model)
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	switch {
	case c.JSON:
		return writeJSON(stdout, m)
	case c.Modelfile:
		_, err := io.WriteString(stdout, s.Modelfile(m))
		return err
	}
	p := m.Provenance
	fmt.Fprintf(stdout, "  model\n    name      %s\n    file      %s\n    size      %s (%d bytes)\n    sha256    %s\n    path      %s\n\n",
		m.Ref(), m.Model.File, format.HumanBytes(m.Model.Size), m.Model.Size, m.Model.SHA256, s.BlobPath(m.Model.SHA256))
	fmt.Fprintf(stdout, "  provenance\n    kind      %s\n", p.Kind)
	for _, kv := range [][2]string{{"url", p.URL}, {"repo", p.Repo}, {"revision", p.Revision}, {"mirror", p.Mirror}, {"path", p.Path}, {"from", p.From}, {"digest", p.DigestSource}} {
		if kv[1] != "" {
			fmt.Fprintf(stdout, "    %-9s %s\n", kv[0], kv[1])
		}
	}
	if len(m.Parameters) > 0 {
		fmt.Fprintln(stdout, "\n  parameters")
		b, _ := json.Marshal(m.Parameters)
		fmt.Fprintf(stdout, "    %s\n", b)
	}
	if m.System != "" {
		fmt.Fprintf(stdout, "\n  system\n    %s\n", m.System)
	}
	for i, msg := range m.Messages {
		if i == 0 {
			fmt.Fprintln(stdout, "\n  messages")
		}
		fmt.Fprintf(stdout, "    %s: %s\n", msg.Role, msg.Content)
	}
	for i, l := range m.License {
		if i == 0 {
			fmt.Fprintln(stdout, "\n  license")
		}
		fmt.Fprintf(stdout, "    %s\n", strings.SplitN(l, "\n", 2)[0])
	}
	return nil
}

// cpCmd is `bankml cp SRC DST`.
type cpCmd struct {
	Source string `arg:"" name:"SOURCE" help:"NAME[:TAG] in the store."`
	Dest   string `arg:"" name:"DESTINATION" help:"The new NAME[:TAG] (replaced when it exists)."`
	storeFlag
}

func (c *cpCmd) Run(stdout io.Writer) error {
	s, err := c.open()
	if err != nil {
		return fmt.Errorf("cp: %w", err)
	}
	m, err := s.Copy(c.Source, c.Dest)
	if err != nil {
		return fmt.Errorf("cp: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "copied %s to %s\n", c.Source, m.Ref())
	return err
}

// rmCmd is `bankml rm NAME...`.
type rmCmd struct {
	Models []string `arg:"" name:"MODEL" help:"NAME[:TAG] to remove (its file goes when no other name uses it)."`
	storeFlag
}

func (c *rmCmd) Run(stdout io.Writer) error {
	s, err := c.open()
	if err != nil {
		return fmt.Errorf("rm: %w", err)
	}
	for _, ref := range c.Models {
		if err := s.Remove(ref); err != nil {
			return fmt.Errorf("rm: %w", err)
		}
		fmt.Fprintf(stdout, "deleted '%s'\n", ref)
	}
	return nil
}

// createCmd is `bankml create NAME -f Modelfile` (Ollama's `ollama create`).
type createCmd struct {
	Model string `arg:"" name:"MODEL" help:"The NAME[:TAG] to create."`
	File  string `short:"f" name:"file" default:"Modelfile" placeholder:"MODELFILE" help:"The Modelfile (Ollama's format: FROM, PARAMETER, SYSTEM, MESSAGE, LICENSE; TEMPLATE and ADAPTER are refused with the reason)." type:"path"`
	mirrorFlag
	storeFlag
}

func (c *createCmd) Run(stdout io.Writer, stderr errWriter, sigs *signals) error {
	s, err := c.open()
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	f, err := os.Open(c.File)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	defer f.Close()
	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, err := s.Create(ctx, c.Model, f, store.CreateOptions{
		Dir: filepath.Dir(c.File), Path: c.File, Pull: pullOptions(stderr, c.From),
		CheckParameters: func(p map[string]any) error {
			ignored, err := serve.CheckModelfileParameters(p)
			for _, i := range ignored {
				fmt.Fprintf(stderr, "warning: create: PARAMETER %s is accepted but not applied by bankml\n", i)
			}
			return err
		},
		Warn: func(w string) { fmt.Fprintln(stderr, "warning: create:", w) },
	})
	if err != nil {
		err = fmt.Errorf("create: %w", err)
		if errors.Is(err, store.ErrModelfile) {
			// The Modelfile is the command's input, as its flags are: a line that does not parse, a bad or
			// unknown PARAMETER, a command bankml does not take (TEMPLATE, ADAPTER, ...) is a usage error, 1,
			// as a bad flag value or a cache type bankml does not take (docs/cli.md, "Exit status").
			return err
		}
		// Its FROM file or model refused for its bytes (no GGUF, a wrong digest): 2, as pull; a FROM that names
		// nothing (as run NAME and pull NAME) and the store's I/O (reading, copying, writing the manifest): 1.
		return refusedPull(err)
	}
	_, err = fmt.Fprintf(stdout, "created %s (sha256 %s)\n", m.Ref(), m.Model.SHA256)
	return err
}
