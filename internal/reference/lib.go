package reference

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/bankml/bankml/internal/cpuvariant"
	"github.com/ebitengine/purego"
)

// EnvLog names the environment variable that, when set to a non-empty value
// other than "0", makes the reference copy llama.cpp's and ggml's log to
// stderr. By default the log is kept in memory only (see [Lib]).
const EnvLog = "BANKML_REFERENCE_LOG"

// Lib is the loaded reference: libggml-base, libggml, one CPU backend (haswell
// unless [EnvVariant] names another) and libllama, with the variant verified
// (see [Load]). llama.cpp and ggml log to stderr by default; Load installs a
// log callback (llama_log_set, which also sets ggml's) that drops the messages
// and keeps the last ones in memory, so errors can quote them ([EnvLog] copies
// everything to stderr instead).
// There is one Lib per process, made by the first call to [Load]; it is
// never unloaded. A Lib is safe for concurrent use.
type Lib struct {
	dir         string // bins folder
	variant     cpuvariant.Variant
	cpuBackend  string   // absolute path of the loaded libggml-cpu-<variant>.so
	cpuReg      uintptr  // its ggml_backend_reg_t
	cpuFeatures []string // "NAME=VALUE" from ggml_backend_get_features
	systemInfo  string   // llama_print_system_info()

	log logRing

	// libggml-base / libggml
	ggmlLogSet          func(cb, userData uintptr)
	ggmlBackendLoad     func(path string) uintptr
	ggmlBackendRegCount func() uint64
	ggmlBackendRegGet   func(i uint64) uintptr
	ggmlBackendRegName  func(reg uintptr) string
	ggmlBackendRegProc  func(reg uintptr, name string) uintptr

	// libllama
	llamaBackendInit          func()
	llamaLogSet               func(cb, userData uintptr)
	llamaPrintSystemInfo      func() string
	llamaModelDefaultParams   func() llamaModelParams
	llamaContextDefaultParams func() llamaContextParams
	llamaModelLoadFromFile    func(path string, p llamaModelParams) uintptr
	llamaModelFree            func(model uintptr)
	llamaModelGetVocab        func(model uintptr) uintptr
	llamaVocabNTokens         func(vocab uintptr) int32
	llamaInitFromModel        func(model uintptr, p llamaContextParams) uintptr
	llamaFree                 func(ctx uintptr)
	llamaNCtx                 func(ctx uintptr) uint32
	llamaDecode               func(ctx uintptr, b llamaBatch) int32
	llamaGetLogitsIth         func(ctx uintptr, i int32) *float32
	llamaTokenize             func(vocab uintptr, text *byte, textLen int32, tokens *int32, nMax int32, addSpecial, parseSpecial bool) int32
	llamaTokenToPiece         func(vocab uintptr, tok int32, buf *byte, length int32, lstrip int32, special bool) int32
	llamaGetMemory            func(ctx uintptr) uintptr
	llamaMemorySeqRm          func(mem uintptr, seqID, p0, p1 int32) bool
	llamaGetLogits            func(ctx uintptr) *float32
	llamaModelNCtxTrain       func(model uintptr) int32
	llamaVocabIsEOG           func(vocab uintptr, tok int32) bool
}

var (
	loadOnce sync.Once
	loaded   *Lib
	loadErr  error
)

// Load loads the reference libraries from [Dir] once per process and returns
// the shared [Lib]; later calls return the same Lib (or the same error). The
// error wraps [ErrNotInstalled] when the libraries are absent.
//
// ggml_backend_load_all, and llama_backend_init when no backend is registered
// yet, would score every libggml-cpu-*.so and load the best one for the host
// (zen4 or skylakex on AVX-512 machines). Load therefore (haswell standing for
// the chosen variant, whose reported features are checked instead of step 3's
// list):
//
//  1. dlopens libggml-base.so and then libggml.v0.5.0.so (RTLD_GLOBAL), and
//     routes ggml's log to this package;
//  2. checks that the backend registry is empty, then calls
//     ggml_backend_load with the explicit path of libggml-cpu-haswell.so
//     (never ggml_backend_load_all);
//  3. verifies through the registry that exactly one backend is registered,
//     that it is the one ggml_backend_load returned, that it is named "CPU",
//     that it is the very object returned by ggml_backend_cpu_reg as resolved
//     by dlsym in the haswell library's own handle, that the address of that
//     object lies in the mapping of libggml-cpu-haswell.so in
//     /proc/self/maps, that no other libggml-cpu-*.so is mapped, and that
//     the backend's compile-time features (ggml_backend_get_features) report
//     AVX2 and FMA and no AVX512;
//  4. dlopens libllama.v0.5.0.so (which resolves libggml by its already
//     loaded soname, hence shares the same registry) and calls
//     llama_backend_init, which only calls ggml_backend_load_all when the
//     registry is empty, so it does not here; the registry is checked again
//     afterwards and before every model load.
func Load() (*Lib, error) {
	loadOnce.Do(func() {
		v, err := ProcessVariant()
		if err != nil {
			loadErr = err
			return
		}
		loaded, loadErr = load(v.Library(), v)
	})
	return loaded, loadErr
}

// load does the work of [Load] with the named CPU backend library, verified
// to be variant want; only tests pass a library of another variant, to see
// the verification reject it.
func load(cpuLib string, want cpuvariant.Variant) (*Lib, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("reference: only linux/amd64 is supported, not %s/%s: %w", runtime.GOOS, runtime.GOARCH, ErrNotInstalled)
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	if err := CanExecute(want); err != nil {
		return nil, err
	}
	l := &Lib{dir: dir, variant: want}
	l.log.echo = os.Getenv(EnvLog) != "" && os.Getenv(EnvLog) != "0"
	logCB := purego.NewCallback(l.log.callback)

	open := func(name string) (uintptr, error) {
		h, err := dlopen(filepath.Join(dir, name), rtldNow|rtldGlobal)
		if err != nil {
			return 0, fmt.Errorf("reference: dlopen %s: %w", name, err)
		}
		return h, nil
	}
	var regErr error
	reg := func(h uintptr, fptr any, name string) {
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

	// 1. ggml base and the backend registry.
	base, err := open(libGGMLBase)
	if err != nil {
		return nil, err
	}
	reg(base, &l.ggmlLogSet, "ggml_log_set")
	reg(base, &l.ggmlBackendRegName, "ggml_backend_reg_name")
	reg(base, &l.ggmlBackendRegProc, "ggml_backend_reg_get_proc_address")
	if regErr != nil {
		return nil, regErr
	}
	l.ggmlLogSet(logCB, 0)
	ggml, err := open(libGGML)
	if err != nil {
		return nil, err
	}
	reg(ggml, &l.ggmlBackendLoad, "ggml_backend_load")
	reg(ggml, &l.ggmlBackendRegCount, "ggml_backend_reg_count")
	reg(ggml, &l.ggmlBackendRegGet, "ggml_backend_reg_get")
	if regErr != nil {
		return nil, regErr
	}

	// 2. The CPU backend, by explicit path.
	if n := l.ggmlBackendRegCount(); n != 0 {
		return nil, fmt.Errorf("reference: %d ggml backends registered before loading the CPU backend; want 0", n)
	}
	l.cpuBackend = filepath.Join(dir, cpuLib)
	mark := l.log.mark()
	l.cpuReg = l.ggmlBackendLoad(l.cpuBackend)
	if l.cpuReg == 0 {
		return nil, fmt.Errorf("reference: ggml_backend_load(%s) failed%s", l.cpuBackend, l.log.since(mark))
	}

	// 3. Verify it.
	if l.cpuFeatures, err = l.verifyCPUBackend(); err != nil {
		return nil, err
	}

	// 4. libllama.
	llama, err := open(libLlama)
	if err != nil {
		return nil, err
	}
	reg(llama, &l.llamaBackendInit, "llama_backend_init")
	reg(llama, &l.llamaLogSet, "llama_log_set")
	reg(llama, &l.llamaPrintSystemInfo, "llama_print_system_info")
	reg(llama, &l.llamaModelDefaultParams, "llama_model_default_params")
	reg(llama, &l.llamaContextDefaultParams, "llama_context_default_params")
	reg(llama, &l.llamaModelLoadFromFile, "llama_model_load_from_file")
	reg(llama, &l.llamaModelFree, "llama_model_free")
	reg(llama, &l.llamaModelGetVocab, "llama_model_get_vocab")
	reg(llama, &l.llamaVocabNTokens, "llama_vocab_n_tokens")
	reg(llama, &l.llamaInitFromModel, "llama_init_from_model")
	reg(llama, &l.llamaFree, "llama_free")
	reg(llama, &l.llamaNCtx, "llama_n_ctx")
	reg(llama, &l.llamaDecode, "llama_decode")
	reg(llama, &l.llamaGetLogitsIth, "llama_get_logits_ith")
	reg(llama, &l.llamaTokenize, "llama_tokenize")
	reg(llama, &l.llamaTokenToPiece, "llama_token_to_piece")
	reg(llama, &l.llamaGetMemory, "llama_get_memory")
	reg(llama, &l.llamaMemorySeqRm, "llama_memory_seq_rm")
	reg(llama, &l.llamaGetLogits, "llama_get_logits")
	reg(llama, &l.llamaModelNCtxTrain, "llama_model_n_ctx_train")
	reg(llama, &l.llamaVocabIsEOG, "llama_vocab_is_eog")
	if regErr != nil {
		return nil, regErr
	}
	l.llamaLogSet(logCB, 0) // also sets ggml's callback
	l.llamaBackendInit()
	if err := l.verifyRegistry(); err != nil {
		return nil, fmt.Errorf("%w (after llama_backend_init)", err)
	}
	l.systemInfo = strings.TrimSpace(l.llamaPrintSystemInfo())
	return l, nil
}

// verifyRegistry checks that ggml's backend registry holds exactly the
// CPU backend loaded by [Load].
func (l *Lib) verifyRegistry() error {
	if n := l.ggmlBackendRegCount(); n != 1 {
		return fmt.Errorf("reference: %d ggml backends registered; want exactly 1 (the %s CPU backend)", n, l.variant)
	}
	if r := l.ggmlBackendRegGet(0); r != l.cpuReg {
		return fmt.Errorf("reference: registered backend %#x is not the %s CPU backend %#x", r, l.variant, l.cpuReg)
	}
	return nil
}

// verifyCPUBackend proves that the registered CPU backend is the one in
// libggml-cpu-<variant>.so and reports the variant's features (see
// [Load]).
func (l *Lib) verifyCPUBackend() ([]string, error) {
	if err := l.verifyRegistry(); err != nil {
		return nil, err
	}
	if name := l.ggmlBackendRegName(l.cpuReg); name != "CPU" {
		return nil, fmt.Errorf("reference: loaded backend is named %q, want \"CPU\"", name)
	}

	// The library's own ggml_backend_cpu_reg must return this object.
	h, err := dlopen(l.cpuBackend, rtldNow|rtldNoload)
	if err != nil || h == 0 {
		return nil, fmt.Errorf("reference: %s is not loaded after ggml_backend_load: %v", l.cpuBackend, err)
	}
	defer dlclose(h)
	sym, err := dlsym(h, "ggml_backend_cpu_reg")
	if err != nil {
		return nil, fmt.Errorf("reference: dlsym ggml_backend_cpu_reg in %s: %w", l.cpuBackend, err)
	}
	var cpuReg func() uintptr
	purego.RegisterFunc(&cpuReg, sym)
	if r := cpuReg(); r != l.cpuReg {
		return nil, fmt.Errorf("reference: %s's ggml_backend_cpu_reg() = %#x, but the registry holds %#x", filepath.Base(l.cpuBackend), r, l.cpuReg)
	}

	// The object lives in the library's mapping, and no other CPU
	// variant is mapped into the process.
	want, err := filepath.EvalSymlinks(l.cpuBackend)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	owner, variants, err := procMaps(l.cpuReg)
	if err != nil {
		return nil, err
	}
	if owner != want {
		return nil, fmt.Errorf("reference: CPU backend object %#x is mapped from %q, want %q", l.cpuReg, owner, want)
	}
	if len(variants) != 1 || variants[0] != want {
		return nil, fmt.Errorf("reference: CPU backend libraries mapped: %q; want only %q", variants, want)
	}

	// Compile-time features of the variant.
	fp := l.ggmlBackendRegProc(l.cpuReg, "ggml_backend_get_features")
	if fp == 0 {
		return nil, errors.New("reference: CPU backend has no ggml_backend_get_features")
	}
	var getFeatures func(reg uintptr) *ggmlBackendFeature
	purego.RegisterFunc(&getFeatures, fp)
	have := map[string]bool{}
	var feats []string
	for f := getFeatures(l.cpuReg); f != nil && f.Name != nil; f = (*ggmlBackendFeature)(unsafe.Add(unsafe.Pointer(f), unsafe.Sizeof(*f))) {
		name, value := goString(f.Name), goString(f.Value)
		feats = append(feats, name+"="+value)
		have[name] = true
	}
	var isa []string
	for _, name := range cpuvariant.ISAFeatureNames() {
		if have[name] {
			isa = append(isa, name)
		}
	}
	if got, want := strings.Join(isa, " "), strings.Join(l.variant.Reported(), " "); got != want {
		return nil, fmt.Errorf("reference: CPU backend features %q report %q; not the %s variant (%q)", feats, got, l.variant, want)
	}
	return feats, nil
}

// procMaps returns the file mapped at addr in /proc/self/maps and the sorted
// list of mapped libggml-cpu-*.so files.
func procMaps(addr uintptr) (owner string, cpuLibs []string, err error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return "", nil, fmt.Errorf("reference: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		path := strings.Join(fields[5:], " ")
		if strings.HasPrefix(filepath.Base(path), "libggml-cpu-") && !seen[path] {
			seen[path] = true
			cpuLibs = append(cpuLibs, path)
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uint64(addr) >= start && uint64(addr) < end {
			owner = path
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("reference: reading /proc/self/maps: %w", err)
	}
	sort.Strings(cpuLibs)
	return owner, cpuLibs, nil
}

// Variant returns the CPU variant loaded.
func (l *Lib) Variant() cpuvariant.Variant { return l.variant }

// Dir returns the folder the libraries were loaded from.
func (l *Lib) Dir() string { return l.dir }

// CPUBackend returns the path of the CPU backend library that was loaded and
// verified (libggml-cpu-<variant>.so in [Lib.Dir]).
func (l *Lib) CPUBackend() string { return l.cpuBackend }

// CPUFeatures returns the CPU backend's compile-time features as reported by
// ggml_backend_get_features, as "NAME=VALUE" strings.
func (l *Lib) CPUFeatures() []string { return append([]string(nil), l.cpuFeatures...) }

// SystemInfo returns llama_print_system_info(), e.g.
// "CPU : SSE3 = 1 | ... | AVX2 = 1 | ...".
func (l *Lib) SystemInfo() string { return l.systemInfo }

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// logRing receives llama.cpp's and ggml's log and keeps the last lines.
type logRing struct {
	echo bool

	mu      sync.Mutex
	seq     uint64 // number of completed lines so far
	lines   [256]logLine
	partial strings.Builder
	level   uint32 // level of the partial line
}

type logLine struct {
	level uint32
	text  string
}

// callback is the ggml_log_callback:
// void (*)(enum ggml_log_level level, const char * text, void * user_data).
func (r *logRing) callback(level uintptr, text *byte, _ uintptr) {
	s := goString(text)
	if r.echo {
		os.Stderr.WriteString(s)
	}
	lv := uint32(level)
	r.mu.Lock()
	defer r.mu.Unlock()
	if lv != ggmlLogLevelCont && r.partial.Len() == 0 {
		r.level = lv
	}
	for s != "" {
		line, rest, nl := strings.Cut(s, "\n")
		r.partial.WriteString(line)
		if !nl {
			break
		}
		r.lines[r.seq%uint64(len(r.lines))] = logLine{level: r.level, text: r.partial.String()}
		r.seq++
		r.partial.Reset()
		s = rest
	}
}

// mark returns a position in the log for [logRing.since].
func (r *logRing) mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// since formats the warning and error lines logged after mark (at most the
// last 8) for appending to an error message; "" if there are none.
func (r *logRing) since(mark uint64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.partial.Len() > 0 {
		r.lines[r.seq%uint64(len(r.lines))] = logLine{level: r.level, text: r.partial.String()}
		r.seq++
		r.partial.Reset()
	}
	if r.seq-mark > uint64(len(r.lines)) {
		mark = r.seq - uint64(len(r.lines))
	}
	var out []string
	for i := mark; i < r.seq; i++ {
		ln := r.lines[i%uint64(len(r.lines))]
		if ln.level == ggmlLogLevelWarn || ln.level == ggmlLogLevelError {
			out = append(out, strings.TrimSpace(ln.text))
		}
	}
	if len(out) > 8 {
		out = out[len(out)-8:]
	}
	if len(out) == 0 {
		return ""
	}
	return "; llama.cpp log: " + strings.Join(out, " | ")
}
