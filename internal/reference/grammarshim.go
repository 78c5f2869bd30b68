package reference

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// grammarShimSource is bankml's C++ shim over the reference's grammar sampler and JSON schema converter (see the
// comment at its top).
//
//go:embed grammarshim.cpp.in
var grammarShimSource string

// GrammarShim is the grammar oracle: the reference's llama_sampler_init_grammar(_lazy_patterns), its accept with
// the exceptions caught, llama_grammar_parser::parse, json_schema_to_grammar, build_grammar, common_json's dump and
// std::regex as llama_grammar_trigger_pattern::find uses it, compiled into a shared object that is loaded into this
// process beside the reference's libllama. Calls are serialized (the shim redirects stderr while a grammar is
// built).
type GrammarShim struct {
	mu sync.Mutex

	init      func(vocab uintptr, str, root string, lazy int32, patterns *uintptr, nPatterns uint64, tokens *int32, nTokens uint64, msg **byte) uintptr
	accept    func(s uintptr, tok int32, msg **byte) int32
	apply     func(s uintptr, data *TokenData, n uint64)
	clone     func(s uintptr) uintptr
	reset     func(s uintptr)
	freeSmpl  func(s uintptr)
	schema    func(schema string, force int32, out **byte) int32
	build     func(script string, out **byte) int32
	dump      func(text string, out **byte) int32
	regexFind func(pattern string, input *byte, n uint64, start *uint64, msg **byte) int32
	parse     func(vocab uintptr, text string, out **byte) int32
	free      func(p *byte)

	csInit       func(model uintptr, params string, err **byte) uintptr
	csSample     func(gs, ctx uintptr, idx int32) int32
	csAccept     func(gs uintptr, tok int32, generated int32, err **byte) int32
	csCandidates func(gs uintptr, out *TokenData, n uint64, selected *int64) uint64
	csReset      func(gs uintptr)
	csFree       func(gs uintptr)
}

var (
	grammarShimOnce sync.Once
	grammarShim     *GrammarShim
	grammarShimErr  error
)

// LoadGrammarShim builds the shim (once per build of the same source for the same reference, in
// $TMPDIR/bankml-grammarshim-HASH: a sparse clone of the source bundle's headers and g++ against libllama-common,
// some 20 s) and loads it into the process after the reference (l). The error wraps ErrNotInstalled when git, g++
// or the source bundle is missing.
func (l *Lib) LoadGrammarShim(ctx context.Context) (*GrammarShim, error) {
	grammarShimOnce.Do(func() { grammarShim, grammarShimErr = l.loadGrammarShim(ctx) })
	return grammarShim, grammarShimErr
}

func (l *Lib) loadGrammarShim(ctx context.Context) (*GrammarShim, error) {
	bundle, err := BundlePath()
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{"git", "g++"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("reference: grammar shim needs %s: %v: %w", tool, err, ErrNotInstalled)
		}
	}
	st, err := os.Stat(bundle)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%d", grammarShimSource, l.dir, bundle, st.Size(), st.ModTime().UnixNano())))
	cache := filepath.Join(os.TempDir(), "bankml-grammarshim-"+hex.EncodeToString(key[:8]))
	so := filepath.Join(cache, "grammarshim.so")
	if !isFile(so) {
		if err := buildGrammarShim(ctx, bundle, l.dir, cache); err != nil {
			return nil, err
		}
	}
	h, err := dlopen(so, rtldNow|rtldGlobal)
	if err != nil {
		return nil, fmt.Errorf("reference: dlopen %s: %w", so, err)
	}
	g := &GrammarShim{}
	for _, f := range []struct {
		fptr any
		name string
	}{
		{&g.init, "gs_grammar_init"}, {&g.accept, "gs_accept"}, {&g.apply, "gs_apply"}, {&g.clone, "gs_clone"},
		{&g.reset, "gs_reset"}, {&g.freeSmpl, "gs_free_sampler"}, {&g.schema, "gs_schema"}, {&g.build, "gs_build"},
		{&g.dump, "gs_dump"}, {&g.regexFind, "gs_regex_find"}, {&g.parse, "gs_parse"}, {&g.free, "gs_free"},
		{&g.csInit, "gs_csampler_init"}, {&g.csSample, "gs_csampler_sample"}, {&g.csAccept, "gs_csampler_accept"},
		{&g.csCandidates, "gs_csampler_candidates"}, {&g.csReset, "gs_csampler_reset"}, {&g.csFree, "gs_csampler_free"},
	} {
		sym, err := dlsym(h, f.name)
		if err != nil {
			return nil, fmt.Errorf("reference: %s: no symbol %s: %w", so, f.name, err)
		}
		purego.RegisterFunc(f.fptr, sym)
	}
	return g, nil
}

func buildGrammarShim(ctx context.Context, bundle, bins, cache string) error {
	dir, err := os.MkdirTemp(filepath.Dir(cache), filepath.Base(cache)+".tmp-")
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src")
	if err := sparseClone(ctx, bundle, src, "/common/", "/include/", "/ggml/include/", "/vendor/", "/src/"); err != nil {
		return err
	}
	cpp := filepath.Join(dir, "grammarshim.cpp")
	if err := os.WriteFile(cpp, []byte(grammarShimSource), 0o644); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	args := []string{"-std=c++17", "-O1", "-shared", "-fPIC", "-o", filepath.Join(dir, "grammarshim.so"), cpp,
		"-I" + filepath.Join(src, "common"), "-I" + filepath.Join(src, "include"), "-I" + filepath.Join(src, "src"),
		"-I" + filepath.Join(src, "ggml", "include"), "-I" + filepath.Join(src, "vendor"),
		"-L" + bins, "-l:libllama-common.so", "-l:" + libLlama, "-l:" + libGGML, "-l:" + libGGMLBase,
		"-Wl,-rpath," + bins}
	if err := runIn(ctx, dir, "g++", args...); err != nil {
		return err
	}
	if err := os.RemoveAll(src); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if err := os.Rename(dir, cache); err != nil && !isFile(filepath.Join(cache, "grammarshim.so")) {
		return fmt.Errorf("reference: %w", err)
	}
	return nil
}

// take copies a malloc'ed C string from the shim and frees it.
func (g *GrammarShim) take(p *byte) string {
	if p == nil {
		return ""
	}
	s := goString(p)
	g.free(p)
	return s
}

// RefGrammar is a grammar sampler of the reference (llama_sampler_init_grammar or _lazy_patterns over a model's
// vocabulary). It is not safe for concurrent use; Free releases it.
type RefGrammar struct {
	g   *GrammarShim
	m   *Model
	s   uintptr
	buf []TokenData
}

// NewGrammar makes the reference's grammar sampler for text with start symbol root over m's vocabulary, lazy with
// the given trigger patterns and tokens when lazy is set. On failure it returns nil and what the reference wrote to
// stderr and its error log (the parser's "parse: error parsing grammar: ..." and the init's messages); msg holds
// that text in any case.
func (g *GrammarShim) NewGrammar(m *Model, text, root string, lazy bool, patterns []string, tokens []int32) (rg *RefGrammar, msg string) {
	var pin runtime.Pinner
	defer pin.Unpin()
	var pp *uintptr
	if len(patterns) > 0 {
		ptrs := make([]uintptr, len(patterns))
		for i, p := range patterns {
			b := append([]byte(p), 0)
			pin.Pin(&b[0])
			ptrs[i] = uintptr(unsafe.Pointer(&b[0]))
		}
		pin.Pin(&ptrs[0])
		pp = &ptrs[0]
	}
	var tp *int32
	if len(tokens) > 0 {
		tp = &tokens[0]
		pin.Pin(tp)
	}
	m.mu.Lock()
	vocab := m.vocab
	m.mu.Unlock()
	l := int32(0)
	if lazy {
		l = 1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out *byte
	s := g.init(vocab, text, root, l, pp, uint64(len(patterns)), tp, uint64(len(tokens)), &out)
	msg = g.take(out)
	if s == 0 {
		return nil, msg
	}
	return &RefGrammar{g: g, m: m, s: s}, msg
}

// Apply runs the sampler's apply on the candidates ids (logit 0 each) and returns, per candidate, whether its logit
// was left alone (not set to -Inf).
func (r *RefGrammar) Apply(ids []int32) []bool {
	if cap(r.buf) < len(ids) {
		r.buf = make([]TokenData, len(ids))
	}
	buf := r.buf[:len(ids)]
	for i, id := range ids {
		buf[i] = TokenData{ID: id}
	}
	out := make([]bool, len(ids))
	if len(ids) == 0 {
		return out
	}
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	r.g.mu.Lock()
	r.g.apply(r.s, &buf[0], uint64(len(buf)))
	r.g.mu.Unlock()
	pin.Unpin()
	for i := range buf {
		out[i] = !(buf[i].Logit < -3.4e38)
	}
	return out
}

// Accept runs the sampler's accept; an exception (an empty grammar stack) is returned as an error with its text.
// An end-of-generation token the grammar cannot end on aborts the reference: do not pass one.
func (r *RefGrammar) Accept(tok int32) error {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	var msg *byte
	if r.g.accept(r.s, tok, &msg) != 0 {
		return errors.New(r.g.take(msg))
	}
	return nil
}

// Clone is llama_sampler_clone.
func (r *RefGrammar) Clone() *RefGrammar {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	return &RefGrammar{g: r.g, m: r.m, s: r.g.clone(r.s)}
}

// Reset is llama_sampler_reset.
func (r *RefGrammar) Reset() {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	r.g.reset(r.s)
}

// Ptr returns the llama_sampler pointer (for llama_sampler_apply in a chain of the reference).
func (r *RefGrammar) Ptr() uintptr { return r.s }

// Free releases the sampler.
func (r *RefGrammar) Free() {
	if r.s != 0 {
		r.g.mu.Lock()
		r.g.freeSmpl(r.s)
		r.g.mu.Unlock()
		r.s = 0
	}
}

// SchemaToGrammar is json_schema_to_grammar(common_json::parse(schema), forceGBNF): the grammar, or the exception's
// text and ok false.
func (g *GrammarShim) SchemaToGrammar(schema string, forceGBNF bool) (out string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := int32(0)
	if forceGBNF {
		f = 1
	}
	var p *byte
	r := g.schema(schema, f, &p)
	return g.take(p), r == 0
}

// BuildOp is one call of build_grammar's builder: Kind "rule" (add_rule(Name, Rule)), "schema" (add_schema(Name,
// the root of Schema)) or "property" (add_schema(Name, the schema of the Index-th property of Schema's root
// object)).
type BuildOp struct {
	Kind   string
	Name   string
	Rule   string
	Schema json.RawMessage
	Index  int
}

// BuildGrammar runs build_grammar over ops with common_grammar_options{dotall}: the grammar, or the exception's
// text and ok false.
func (g *GrammarShim) BuildGrammar(ops []BuildOp, dotall bool) (out string, ok bool, err error) {
	var list []any
	for _, op := range ops {
		switch op.Kind {
		case "rule":
			list = append(list, []any{"rule", op.Name, op.Rule})
		case "schema":
			list = append(list, []any{"schema", op.Name, op.Schema})
		case "property":
			list = append(list, []any{"property", op.Name, op.Schema, op.Index})
		default:
			return "", false, fmt.Errorf("reference: build op %q", op.Kind)
		}
	}
	script, err := json.Marshal(map[string]any{"dotall": dotall, "ops": list})
	if err != nil {
		return "", false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var p *byte
	r := g.build(string(script), &p)
	return g.take(p), r == 0, nil
}

// DumpJSON is common_json::parse(text).dump(): the text, or the exception's text and ok false.
func (g *GrammarShim) DumpJSON(text string) (out string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var p *byte
	r := g.dump(text, &p)
	return g.take(p), r == 0
}

// TriggerFind is llama_grammar_trigger_pattern::find with std::regex(pattern) on input: the start position and
// whether it matched; err holds the text of std::regex's exception for a pattern it refuses.
func (g *GrammarShim) TriggerFind(pattern, input string) (start int, found bool, err error) {
	b := append([]byte(input), 0)
	var pin runtime.Pinner
	pin.Pin(&b[0])
	defer pin.Unpin()
	g.mu.Lock()
	defer g.mu.Unlock()
	var st uint64
	var msg *byte
	switch g.regexFind(pattern, &b[0], uint64(len(input)), &st, &msg) {
	case 1:
		return int(st), true, nil
	case 0:
		return 0, false, nil
	}
	return 0, false, errors.New(g.take(msg))
}

// ParsedGrammar is what llama_grammar_parser::parse leaves: its symbol ids and rules ([type, value] pairs).
type ParsedGrammar struct {
	Symbols map[string]uint32 `json:"symbols"`
	Rules   [][][2]uint32     `json:"rules"`
}

// ParseGrammar runs llama_grammar_parser::parse on text with m's vocabulary (m may be nil: no vocabulary). On
// failure it returns nil and what the parser wrote to stderr.
func (g *GrammarShim) ParseGrammar(m *Model, text string) (*ParsedGrammar, string, error) {
	var vocab uintptr
	if m != nil {
		m.mu.Lock()
		vocab = m.vocab
		m.mu.Unlock()
	}
	g.mu.Lock()
	var p *byte
	r := g.parse(vocab, text, &p)
	out := g.take(p)
	g.mu.Unlock()
	if r != 0 {
		return nil, out, nil
	}
	var pg ParsedGrammar
	if err := json.Unmarshal([]byte(out), &pg); err != nil {
		return nil, "", fmt.Errorf("reference: parsed grammar %q: %w", out, err)
	}
	return &pg, "", nil
}

// CheckoutBundle checks the given folders of the reference's source bundle out into a cache folder
// ($TMPDIR/bankml-bundle-HASH, made once for the same bundle and folders) and returns it.
func CheckoutBundle(ctx context.Context, folders ...string) (string, error) {
	bundle, err := BundlePath()
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("reference: checking out the source bundle needs git: %v: %w", err, ErrNotInstalled)
	}
	st, err := os.Stat(bundle)
	if err != nil {
		return "", fmt.Errorf("reference: %w", err)
	}
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%q", bundle, st.Size(), st.ModTime().UnixNano(), folders)))
	cache := filepath.Join(os.TempDir(), "bankml-bundle-"+hex.EncodeToString(key[:8]))
	if isDir(cache) {
		return cache, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), filepath.Base(cache)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("reference: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if err := sparseClone(ctx, bundle, src, folders...); err != nil {
		return "", err
	}
	if err := os.Rename(src, cache); err != nil && !isDir(cache) {
		return "", fmt.Errorf("reference: %w", err)
	}
	return cache, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// CommonSampler is llama.cpp's own common_sampler (libllama-common: common_sampler_init, common_sampler_sample,
// common_sampler_accept) over a model, the whole of llama-server's sampling: the chain, the grammar sampler joined
// to it (the draw checked, the candidates masked and drawn again when the grammar refuses it), the reasoning
// budget sampler, the prefill of the generation prompt. It is not safe for concurrent use; Free releases it.
type CommonSampler struct {
	g   *GrammarShim
	m   *Model
	gs  uintptr
	buf []TokenData
}

// NewCommonSampler builds common_sampler_init(model, params) with common_params_sampling set from p (its stage
// names as common_sampler_types_from_names reads them; a GrammarType of 0 with a grammar is a user grammar). The
// error carries the exception's text (a grammar that does not parse: "failed to parse grammar").
func (g *GrammarShim) NewCommonSampler(m *Model, p CommonSamplerParams) (*CommonSampler, error) {
	if p.Grammar != "" && p.GrammarType == 0 {
		p.GrammarType = 1
	}
	params, err := p.structJSON()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	ptr := m.ptr
	m.mu.Unlock()
	if ptr == 0 {
		return nil, errClosed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var msg *byte
	gs := g.csInit(ptr, string(params), &msg)
	if gs == 0 {
		return nil, fmt.Errorf("reference: common_sampler_init: %s", g.take(msg))
	}
	return &CommonSampler{g: g, m: m, gs: gs}, nil
}

// Sample is common_sampler_sample(gsmpl, ctx, -1) on the logits of the session's last decoded token.
func (c *CommonSampler) Sample(s *Session) int32 {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	return c.g.csSample(c.gs, s.ctx, -1)
}

// Accept is common_sampler_accept(gsmpl, tok, generated); an exception (the grammar cannot take the token) is
// returned as an error with its text.
func (c *CommonSampler) Accept(tok int32, generated bool) error {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	gen := int32(0)
	if generated {
		gen = 1
	}
	var msg *byte
	if c.g.csAccept(c.gs, tok, gen, &msg) != 0 {
		return errors.New(c.g.take(msg))
	}
	return nil
}

// Candidates returns common_sampler_get_candidates(gsmpl, false): the candidates the last Sample left and the
// selected index.
func (c *CommonSampler) Candidates() ([]TokenData, int) {
	n := c.m.NVocab()
	if cap(c.buf) < n {
		c.buf = make([]TokenData, n)
	}
	buf := c.buf[:n]
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	defer pin.Unpin()
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	var sel int64
	k := c.g.csCandidates(c.gs, &buf[0], uint64(n), &sel)
	return append([]TokenData(nil), buf[:min(int(k), n)]...), int(sel)
}

// Reset is common_sampler_reset.
func (c *CommonSampler) Reset() {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.g.csReset(c.gs)
}

// Free is common_sampler_free.
func (c *CommonSampler) Free() {
	if c.gs != 0 {
		c.g.mu.Lock()
		c.g.csFree(c.gs)
		c.g.mu.Unlock()
		c.gs = 0
	}
}
