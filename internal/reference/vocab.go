package reference

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// This file binds the reference's tokenizer entry points beyond llama_tokenize and llama_token_to_piece:
// vocabulary-only model loading (as llama-tokenize and tests/test-tokenizer-0 load a model), llama_detokenize, the
// llama_vocab_* accessors, and four C++ functions of src/unicode.cpp that libllama exports (unicode_cpt_flags_from_cpt,
// unicode_tolower, unicode_cpts_normalize_nfd, unicode_regex_split). The C++ ones are called with the Itanium C++
// ABI by hand: std::vector and std::__cxx11::string are laid out as libstdc++ lays them out on linux/amd64
// (three pointers; pointer, length, 16-byte union), and a class returned by value goes through a hidden pointer
// passed first (its address comes back in rax). Vectors and strings the reference returns are freed with its own
// operator delete(void*, size_t).

// vocabAPI holds the functions of this file, resolved in libllama's handle once per process.
type vocabAPI struct {
	detokenize   func(vocab uintptr, toks *int32, n int32, text *byte, max int32, removeSpecial, unparseSpecial bool) int32
	getAttr      func(vocab uintptr, tok int32) uint32
	isEOG        func(vocab uintptr, tok int32) bool
	addBOS       func(vocab uintptr) bool
	addEOS       func(vocab uintptr) bool
	special      map[string]func(vocab uintptr) int32
	cptFlags     func(cpt uint32) uint16
	tolower      func(cpt uint32) uint32
	normalizeNFD func(ret, in uintptr) uintptr
	regexSplit   func(ret, text, exprs uintptr, byteEncode bool) uintptr
	opDelete     func(p unsafe.Pointer, size uint64)
}

var (
	vocabOnce sync.Once
	vocabFns  *vocabAPI
	vocabErr  error
)

// Specials lists the names [Model.Special] accepts: the llama_vocab_<name> accessors of llama.h.
var Specials = []string{"bos", "eos", "eot", "sep", "nl", "pad", "mask", "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep"}

func (l *Lib) vocab() (*vocabAPI, error) {
	vocabOnce.Do(func() {
		h, err := dlopen(filepath.Join(l.dir, libLlama), rtldNow|rtldGlobal)
		if err != nil {
			vocabErr = fmt.Errorf("reference: dlopen %s: %w", libLlama, err)
			return
		}
		a := &vocabAPI{special: map[string]func(uintptr) int32{}}
		var regErr error
		reg := func(fptr any, name string) {
			if regErr != nil {
				return
			}
			sym, err := dlsym(h, name)
			if err != nil {
				regErr = fmt.Errorf("reference: dlsym %s: %w", name, err)
				return
			}
			purego.RegisterFunc(fptr, sym)
		}
		reg(&a.detokenize, "llama_detokenize")
		reg(&a.getAttr, "llama_vocab_get_attr")
		reg(&a.isEOG, "llama_vocab_is_eog")
		reg(&a.addBOS, "llama_vocab_get_add_bos")
		reg(&a.addEOS, "llama_vocab_get_add_eos")
		for _, name := range Specials {
			var f func(uintptr) int32
			reg(&f, "llama_vocab_"+name)
			a.special[name] = f
		}
		reg(&a.cptFlags, "_Z26unicode_cpt_flags_from_cptj")
		reg(&a.tolower, "_Z15unicode_tolowerj")
		reg(&a.normalizeNFD, "_Z26unicode_cpts_normalize_nfdRKSt6vectorIjSaIjEE")
		reg(&a.regexSplit, "_Z19unicode_regex_splitRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKSt6vectorIS4_SaIS4_EEb")
		reg(&a.opDelete, "_ZdlPvm")
		vocabFns, vocabErr = a, regErr
	})
	return vocabFns, vocabErr
}

// LoadVocab loads only the vocabulary of the GGUF file at path (llama_model_default_params with vocab_only =
// true, as tools/tokenize and tests/test-tokenizer-0 do), so files without tensors, such as llama.cpp's
// ggml-vocab-*.gguf, load too. The Model supports the tokenizer methods only (Tokenize, TokenToPiece, Detokenize,
// TokenAttr, ...); call [Model.Close] to free it.
func (l *Lib) LoadVocab(path string) (*Model, error) {
	if _, err := l.vocab(); err != nil {
		return nil, err
	}
	return l.loadModel(path, true)
}

// loadModel is LoadModel (vocabOnly false) and LoadVocab (true).
func (l *Lib) loadModel(path string, vocabOnly bool) (*Model, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if err := l.verifyRegistry(); err != nil {
		return nil, err
	}
	p := l.llamaModelDefaultParams()
	p.NGPULayers = 0
	p.SplitMode = llamaSplitModeNone
	p.LoadMode = llamaLoadModeMmap
	p.VocabOnly = vocabOnly
	mark := l.log.mark()
	ptr := l.llamaModelLoadFromFile(path, p)
	if ptr == 0 {
		return nil, fmt.Errorf("reference: llama_model_load_from_file(%q, vocab_only=%v) failed%s", path, vocabOnly, l.log.since(mark))
	}
	m := &Model{lib: l, path: path, ptr: ptr}
	m.vocab = l.llamaModelGetVocab(ptr)
	m.nVocab = int(l.llamaVocabNTokens(m.vocab))
	if m.vocab == 0 || m.nVocab <= 0 {
		l.llamaModelFree(ptr)
		return nil, fmt.Errorf("reference: %q: no vocabulary (n_vocab %d)", path, m.nVocab)
	}
	return m, nil
}

// api returns the vocabulary functions, with m.mu held by the caller.
func (m *Model) api() (*vocabAPI, error) {
	if m.ptr == 0 {
		return nil, errClosed
	}
	return m.lib.vocab()
}

// Detokenize returns llama_detokenize(vocab, ids, removeSpecial, unparseSpecial): the text of ids (not
// necessarily valid UTF-8).
func (m *Model) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.api()
	if err != nil {
		return nil, err
	}
	for i, t := range ids {
		if t < 0 || int(t) >= m.nVocab {
			return nil, fmt.Errorf("reference: ids[%d] = %d out of range [0,%d)", i, t, m.nVocab)
		}
	}
	if len(ids) > math.MaxInt32 {
		return nil, fmt.Errorf("reference: %d ids is too many", len(ids))
	}
	toks := append([]int32(nil), ids...)
	toks = append(toks, 0) // a valid pointer even for no ids
	buf := make([]byte, 16+8*len(ids))
	for range 2 {
		n := a.detokenize(m.vocab, &toks[0], int32(len(ids)), &buf[0], int32(len(buf)), removeSpecial, unparseSpecial)
		if n >= 0 {
			return buf[:n:n], nil
		}
		buf = make([]byte, -int(n)+1)
	}
	return nil, errors.New("reference: llama_detokenize: buffer size did not converge")
}

// TokenAttr returns llama_vocab_get_attr (enum llama_token_attr bits).
func (m *Model) TokenAttr(tok int32) (uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.api()
	if err != nil {
		return 0, err
	}
	if tok < 0 || int(tok) >= m.nVocab {
		return 0, fmt.Errorf("reference: token %d out of range [0,%d)", tok, m.nVocab)
	}
	return a.getAttr(m.vocab, tok), nil
}

// IsEOG returns llama_vocab_is_eog.
func (m *Model) IsEOG(tok int32) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.api()
	if err != nil {
		return false, err
	}
	return a.isEOG(m.vocab, tok), nil
}

// AddBOSEOS returns llama_vocab_get_add_bos and llama_vocab_get_add_eos.
func (m *Model) AddBOSEOS() (bos, eos bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.api()
	if err != nil {
		return false, false, err
	}
	return a.addBOS(m.vocab), a.addEOS(m.vocab), nil
}

// Special returns llama_vocab_<name> for a name in [Specials] (LLAMA_TOKEN_NULL is -1).
func (m *Model) Special(name string) (int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.api()
	if err != nil {
		return 0, err
	}
	f, ok := a.special[name]
	if !ok {
		return 0, fmt.Errorf("reference: no accessor llama_vocab_%s", name)
	}
	return f(m.vocab), nil
}

// Unicode gives the reference's src/unicode.cpp functions; it is safe for concurrent use.
type Unicode struct{ a *vocabAPI }

// Unicode returns the exported src/unicode.cpp functions of the reference's libllama.
func (l *Lib) Unicode() (*Unicode, error) {
	a, err := l.vocab()
	if err != nil {
		return nil, err
	}
	return &Unicode{a: a}, nil
}

// CptFlags returns unicode_cpt_flags_from_cpt(cpt).as_uint().
func (u *Unicode) CptFlags(cpt uint32) uint16 { return u.a.cptFlags(cpt) }

// ToLower returns unicode_tolower(cpt).
func (u *Unicode) ToLower(cpt uint32) uint32 { return u.a.tolower(cpt) }

// cxxVector is libstdc++'s std::vector<T> on linux/amd64: begin, end, end of storage.
type cxxVector struct{ begin, end, cap unsafe.Pointer }

// cxxString is libstdc++'s std::__cxx11::basic_string<char> on linux/amd64.
type cxxString struct {
	ptr unsafe.Pointer
	len uint64
	buf [16]byte // capacity when ptr is not &buf
}

// NormalizeNFD returns unicode_cpts_normalize_nfd(cpts).
func (u *Unicode) NormalizeNFD(cpts []uint32) []uint32 {
	if len(cpts) == 0 {
		return nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&cpts[0])
	in := &cxxVector{begin: unsafe.Pointer(&cpts[0])}
	in.end = unsafe.Add(in.begin, 4*len(cpts))
	in.cap = in.end
	out := &cxxVector{}
	pin.Pin(in)
	pin.Pin(out)
	u.a.normalizeNFD(uintptr(unsafe.Pointer(out)), uintptr(unsafe.Pointer(in)))
	n := (uintptr(out.end) - uintptr(out.begin)) / 4
	res := append([]uint32(nil), unsafe.Slice((*uint32)(out.begin), n)...)
	if out.begin != nil {
		u.a.opDelete(out.begin, uint64(uintptr(out.cap)-uintptr(out.begin)))
	}
	return res
}

// RegexSplit returns unicode_regex_split(text, exprs, byteEncode): the pieces llama.cpp's BPE pre-tokenizer cuts
// text into with the regular expressions exprs, each piece byte-encoded (bytes → GPT-2's printable characters)
// when byteEncode. The reference throws, which ends the process, on a code point above U+10FFFF in text (lead
// bytes F4 90.. to F7) and on an expression std::regex rejects: callers must not pass those.
func (u *Unicode) RegexSplit(text string, exprs []string, byteEncode bool) []string {
	var pin runtime.Pinner
	defer pin.Unpin()
	cstr := func(s string) cxxString {
		b := append([]byte(s), 0)
		pin.Pin(&b[0])
		return cxxString{ptr: unsafe.Pointer(&b[0]), len: uint64(len(s))}
	}
	t := cstr(text)
	pin.Pin(&t)
	ex := make([]cxxString, len(exprs)+1)
	for i, e := range exprs {
		ex[i] = cstr(e)
	}
	pin.Pin(&ex[0])
	vec := &cxxVector{begin: unsafe.Pointer(&ex[0])}
	vec.end = unsafe.Add(vec.begin, uintptr(len(exprs))*unsafe.Sizeof(cxxString{}))
	vec.cap = vec.end
	pin.Pin(vec)
	out := &cxxVector{}
	pin.Pin(out)
	u.a.regexSplit(uintptr(unsafe.Pointer(out)), uintptr(unsafe.Pointer(&t)), uintptr(unsafe.Pointer(vec)), byteEncode)
	size := unsafe.Sizeof(cxxString{})
	var res []string
	for p := out.begin; uintptr(p) < uintptr(out.end); p = unsafe.Add(p, size) {
		s := (*cxxString)(p)
		res = append(res, string(unsafe.Slice((*byte)(s.ptr), s.len)))
		if s.ptr != unsafe.Pointer(&s.buf) {
			u.a.opDelete(s.ptr, *(*uint64)(unsafe.Pointer(&s.buf))+1)
		}
	}
	if out.begin != nil {
		u.a.opDelete(out.begin, uint64(uintptr(out.cap)-uintptr(out.begin)))
	}
	return res
}
