// Package guard judges a GGUF model file from its header alone, before any tensor data is read: play, refuse (with
// every reason found) or need_more (with the header bytes needed), for mainline llama.cpp, the PrismML fork or bankml.
//
// # Design record
//
// What it does. [Check] reads the header from an [io.ReaderAt] front to back through a small reader of its own
// (header.go) and judges it; [File] does so for a path. The reader reads only bytes the header's own counts and
// lengths prove to be header: it keeps a floor, the least end of a well-formed header given what it has read, and
// never reads past it (its read-ahead stops there), so tensor data is never read, and neither are the strings and
// numeric arrays it skips (token texts, scores). It keeps the keys, the tensor infos, the scalars, three strings
// (general.architecture, general.name, general.basename) and, of arrays, only their element type and length.
// Memory is bounded by the header, which is bounded by [Options.MaxHeader]. The bankml engine is mainline's rules
// plus PTQTP trit-plane files (package ternary).
//
// What it follows. The verdicts, the first three traps and their reasons are those of bankml's original guard (the
// Python gguf_guard.py and its Rust port gguf.rs, which this package reimplements), and so are the JSON field names
// of its report. The acceptance rules of the header are those of the reference's gguf reader (ggml/src/gguf.cpp of
// llama.cpp v0.5.0) as package gguf applies them, so that a file the guard lets play on mainline is one
// [gguf.Parse] accepts (FuzzGuard checks this); the tokenizer checks follow src/llama-vocab.cpp
// (llama_vocab::impl::load). [Check] lists the traps (fork-only types, legacy group-128 Q2_0, Bonsai 2 by name,
// PTQTP planes, split parts) and the hostile headers it refuses.
//
// Deliberate differences (detailed at [Check]). A truncated header is need_more only when a file the guard accepts
// could hold it; a count no such file could hold is refused as hostile. Every header rule of package gguf applies,
// and out-of-vocabulary special-token ids are refused, where the original skipped most hostile checks and the
// reference only warns. The report adds reason, file_size, data_offset and bytes_missing.
//
// Determinism. The report is a pure function of the header bytes, the file size and the options: reasons come in
// a fixed order (types, shapes, the legacy Q2_0 trap, layout, the Bonsai 2 trap, split parts, PTQTP, tokenizer),
// each naming the first offender, and types are counted by name (JSON objects are written with sorted keys).
package guard

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/fsutil"
)

// Engine names the engine a file is judged for.
type Engine string

// The engines.
const (
	Mainline Engine = "mainline" // ggml-org llama.cpp (the reference)
	Prism    Engine = "prism"    // the PrismML fork, which adds PQ2_0 and PTQ1_0 and the Bonsai 2 transform
	Bankml   Engine = "bankml"   // bankml's own loader: mainline's rules, and PTQTP trit-plane files (package ternary)
)

// Verdict is the guard's judgement.
type Verdict string

// The verdicts.
const (
	Play     Verdict = "play"      // the file may be loaded
	Refuse   Verdict = "refuse"    // the file must not be loaded; Report.Reasons says why
	NeedMore Verdict = "need_more" // the header runs past the bytes available; Report.BytesNeeded says how far
)

// The PrismML fork's tensor types, unknown to mainline ggml (whose ids stop at 42).
const (
	PQ2_0  gguf.GGMLType = 142 // Q2_0 at group 128: 128 elements in 34 bytes
	PTQ1_0 gguf.GGMLType = 143 // ternary, base-3 trits: 128 elements in 28 bytes
)

// DefaultMaxHeader is the largest header, in bytes, the guard reads when Options.MaxHeader is 0.
const DefaultMaxHeader = 64 << 20

// mainlineCount is GGML_TYPE_COUNT of the reference: mainline type ids are 0-42.
const mainlineCount = 43

// maxHeaderCap bounds Options.MaxHeader, so that offsets in the reader cannot overflow.
const maxHeaderCap = 1 << 40

// Errors of Report.Err, for use with errors.Is.
var (
	ErrRefused  = errors.New("refused")          // the verdict is refuse
	ErrNeedMore = errors.New("header truncated") // the verdict is need_more
)

// Metadata keys the guard reads.
const (
	keyArch       = "general.architecture"
	keyName       = "general.name"
	keyBasename   = "general.basename"
	keySplitCount = "split.count" // LLM_KV_SPLIT_COUNT
	keySplitNo    = "split.no"    // LLM_KV_SPLIT_NO
)

// Options says how to judge a file. The zero value judges for mainline with no file name.
type Options struct {
	Engine    Engine // Mainline (the default when empty), Prism or Bankml
	FileName  string // the file's name, matched by the Bonsai 2 check; File sets it to the path's base name
	MaxHeader int64  // the largest header read, in bytes; 0 means DefaultMaxHeader
}

// Report is the guard's judgement of one file. Its JSON form is the original guard's report (field names kept)
// plus reason, file_size, data_offset and bytes_missing.
type Report struct {
	Verdict      Verdict  `json:"verdict"`                 // play, refuse or need_more
	Reason       string   `json:"reason"`                  // Reasons joined by "; "; empty on play
	Reasons      []string `json:"reasons"`                 // why the verdict is not play, in check order; empty on play
	BytesNeeded  uint64   `json:"bytes_needed,omitempty"`  // need_more: the least header size in bytes
	BytesMissing uint64   `json:"bytes_missing,omitempty"` // need_more: bytes needed beyond those available
	Engine       Engine   `json:"engine"`                  // the engine judged for
	FileSize     uint64   `json:"file_size"`               // bytes
	GGUFVersion  uint32   `json:"gguf_version,omitempty"`  // 2 or 3, when read
	Arch         string   `json:"arch"`                    // general.architecture, when read
	Name         string   `json:"name"`                    // general.name, when read
	// The rest is set only when the whole header was read.
	Tensors    int            `json:"tensors"`     // tensor count
	Types      map[string]int `json:"types"`       // tensor count per type name (TypeName)
	DataOffset uint64         `json:"data_offset"` // bytes: where tensor data starts; the guard read none past it
	// KVF16BytesPerToken is the f16 KV cache's bytes per token, block_count × head_count_kv × (key_length +
	// value_length) × 2, with embedding_length/head_count as the head size when key_length is absent; nil when a
	// key is absent, not an integer (per-layer arrays) or the product overflows.
	KVF16BytesPerToken *uint64 `json:"kv_f16_bytes_per_token,omitempty"`
	// PTQTP describes the file's PTQTP trit-plane matrices; nil when it has neither plane tensors nor the key.
	PTQTP *PTQTPReport `json:"ptqtp,omitempty"`
}

// Err returns nil for play and otherwise an error naming the verdict and its reasons, wrapping ErrRefused or
// ErrNeedMore.
func (r *Report) Err() error {
	switch r.Verdict {
	case Play:
		return nil
	case NeedMore:
		return fmt.Errorf("guard: %w: the header needs at least %d bytes, %d more than are available (%s)",
			ErrNeedMore, r.BytesNeeded, r.BytesMissing, r.Reason)
	}
	return fmt.Errorf("guard: %w on %s: %s", ErrRefused, r.Engine, r.Reason)
}

// TypeName returns the upper-case name of a tensor type id as the report counts it: ggml's name for ids 0-42
// ("F32", "Q8_0", "Q4_K", and the former name of a removed id, "Q4_2"), "PQ2_0" and "PTQ1_0" for the fork's types,
// and the decimal id for any other.
func TypeName(t gguf.GGMLType) string {
	switch {
	case t == PQ2_0:
		return "PQ2_0"
	case t == PTQ1_0:
		return "PTQ1_0"
	case t >= mainlineCount:
		return strconv.FormatUint(uint64(t), 10)
	}
	return strings.ToUpper(t.String())
}

// layout returns the elements and bytes per block of a type the guard can size: ggml's defined types and the
// fork's two.
func layout(t gguf.GGMLType) (block, size uint64, ok bool) {
	switch t {
	case PQ2_0:
		return 128, 34, true
	case PTQ1_0:
		return 128, 28, true
	}
	return uint64(t.BlockSize()), uint64(t.TypeSize()), t.BlockSize() > 0
}

// FileForBankml is the admission rule bankml's commands share (run, perplexity, serve): path is judged for mainline
// llama.cpp (File with default Options) and, when mainline refuses it and it holds PTQTP trit-planes, judged again
// for engine Bankml, whose loader reads them. It returns the report that decides and, when the second judgement
// overruled the first, mainline's refusal (nil otherwise), so that the caller can say that mainline would refuse the
// file. The error is File's.
func FileForBankml(path string) (rep, mainline *Report, err error) {
	rep, err = File(path, Options{})
	if err != nil || rep.Verdict == Play || rep.PTQTP == nil {
		return rep, nil, err
	}
	mainline = rep
	if rep, err = File(path, Options{Engine: Bankml}); err != nil {
		return nil, nil, err
	}
	if rep.Verdict != Play {
		return rep, nil, nil
	}
	return rep, mainline, nil
}

// File guards the file at path: it reads the header and nothing else. Options.FileName defaults to the path's base
// name. The error is an I/O error (opening or reading the file) or bad options; the verdict is in the Report.
func File(path string, opt Options) (*Report, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("guard: %s is not a regular file", path)
	}
	if opt.FileName == "" {
		opt.FileName = filepath.Base(path)
	}
	rep, err := Check(f, st.Size(), opt)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return rep, nil
}

// Check guards a file of size bytes whose bytes r reads: it reads the header and nothing past it. r may hold fewer
// bytes than size (a prefix of the file): a header that runs past them is need_more. The error is an I/O error
// from r (anything but io.EOF) or bad options; the verdict, whatever it is, is in the Report.
//
// The traps (refused with a named reason):
//   - fork-only tensor types PQ2_0 (142) and PTQ1_0 (143) on mainline, which refuses them; on the prism engine
//     they play, with the fork's block layouts (128 elements in 34 and 28 bytes);
//   - legacy group-128 Q2_0 bytes filed under type 42 (Q2_0 is group-64 in ggml): a type-42 tensor whose span (to
//     the next tensor's offset, or to the end of the file) is smaller than nelements/64*18 bytes but holds
//     nelements/128*34; on both engines;
//   - Bonsai 2 weights, in a rotated basis that mainline loads and answers in fluent nonsense: found by name only,
//     general.name, general.basename or the file name matching (?i)bonsai[\s_-]*2|prism-fork-required; on mainline
//     (and bankml);
//   - PTQTP trit-plane files (package ternary, Fucina's format: matrices stored as "<name>.ptqtp0..2" plane tensors
//     under the fucina.ptqtp.version key): on mainline and prism, which cannot run them (every plane is a valid
//     tensor, but a layer is the sum of its planes); they are bankml/Fucina-only, bankml-only with Q2_0 planes. On
//     the bankml engine they play when ternary.LoadPlanes would load them (version u32 1, planes in order, one type
//     TQ2_0 or Q2_0 and one 2-D shape per matrix).
//   - the parts of a split model (split.count > 1, llama.cpp's gguf-split files "<prefix>-0000i-of-0000N.gguf"),
//     each refused naming the parts and how to merge them, since bankml loads a model from one file; a split.count
//     or split.no that is not a u16 is refused in llama_model_loader's words.
//
// Hostile headers are refused with what is wrong and where: bad magic, unsupported version, big-endian, an empty or
// duplicate key, an unknown value type, arrays nested over 64 deep, a count or length that cannot fit in the file,
// an empty, duplicate or over-long tensor name, more than 4 dimensions, a dimension below 1, an element count or
// byte size over 63 bits, a bad general.alignment, a row that is not a whole number of blocks, an unknown or
// removed type id (named), a data section or tensor past the end of the file, misaligned, overlapping or unpacked
// tensor offsets, a tokenizer array of the wrong element type or shorter than the vocabulary, a special-token id
// of the wrong type, and a bos/eos/unk/pad id outside the vocabulary (0xFFFFFFFF, "none", is allowed).
//
// Deliberate differences from the original guard and the reference:
//   - need_more versus refuse. A header that runs past the bytes available (a truncated file, or a prefix of one)
//     is need_more, with bytes_needed the least header size in bytes the reader can prove (a lower bound: more may
//     be needed once those bytes are read). A count or length that no file the guard accepts could hold is refused
//     as hostile: over the reference's limits (a string over 1 GiB, an array over 2^30 elements) or needing more
//     header than MaxHeader (default 64 MiB; real headers, vocabularies included, take a few MiB). The original
//     reported every truncation as need_more, whatever the size claimed.
//   - The original skipped most hostile checks (duplicate keys, dimensions, offsets, tokenizer); the guard applies
//     every header rule of the reference's gguf reader and of package gguf (which is stricter: no zero dimension,
//     every tensor inside the file), the reference's tokenizer type checks, and refuses out-of-vocabulary
//     bos/eos/unk/pad ids, which the reference only warns about.
//   - The Bonsai 2 pattern is matched against each name separately, not against the names joined by spaces.
//   - The report adds reason (the reasons joined by "; "), file_size, data_offset and bytes_missing.
func Check(r io.ReaderAt, size int64, opt Options) (*Report, error) {
	if opt.Engine == "" {
		opt.Engine = Mainline
	}
	if opt.Engine != Mainline && opt.Engine != Prism && opt.Engine != Bankml {
		return nil, fmt.Errorf("guard: unknown engine %q, want %q, %q or %q", opt.Engine, Mainline, Prism, Bankml)
	}
	if size < 0 {
		return nil, fmt.Errorf("guard: negative file size %d", size)
	}
	limit := opt.MaxHeader
	if limit <= 0 {
		limit = DefaultMaxHeader
	}
	limit = min(limit, maxHeaderCap)

	rep := &Report{Engine: opt.Engine, FileSize: uint64(size), Reasons: []string{}, Types: map[string]int{}}
	h, err := readHeader(r, uint64(size), uint64(limit))
	rep.GGUFVersion = h.version
	rep.Arch = h.kv[keyArch].str
	rep.Name = h.kv[keyName].str
	var nm *needMore
	var ioe *ioError
	switch {
	case errors.As(err, &ioe):
		return nil, ioe.err
	case errors.As(err, &nm):
		rep.Verdict = NeedMore
		rep.BytesNeeded = nm.need
		rep.BytesMissing = nm.need - nm.have
		rep.Reasons = append(rep.Reasons, nm.Error())
	case err != nil:
		rep.Verdict = Refuse
		rep.Reasons = append(rep.Reasons, err.Error())
	default:
		judge(h, rep, opt)
	}
	rep.Reason = strings.Join(rep.Reasons, "; ")
	return rep, nil
}

// bonsai2 matches the names of Bonsai 2 files, which need the fork's Hadamard transform.
var bonsai2 = regexp.MustCompile(`(?i)bonsai[\s_-]*2|prism-fork-required`)

// judge checks a whole header and sets the rest of rep.
func judge(h *header, rep *Report, opt Options) {
	rep.Tensors = len(h.tensors)
	rep.DataOffset = h.dataOffset
	why := &rep.Reasons
	add := func(format string, a ...any) { *why = append(*why, fmt.Sprintf(format, a...)) }

	// Types: counted by name; unknown, removed and (on mainline) fork-only ids refused by name.
	counts := map[uint32]int{}
	for _, t := range h.tensors {
		counts[t.typ]++
	}
	ids := make([]uint32, 0, len(counts))
	for id, n := range counts {
		ids = append(ids, id)
		rep.Types[TypeName(gguf.GGMLType(id))] = n
	}
	slices.Sort(ids)
	var unknown, removed, fork []string
	for _, id := range ids {
		t := gguf.GGMLType(id)
		named := fmt.Sprintf("%s (%d)", TypeName(t), id)
		switch _, _, ok := layout(t); {
		case t == PQ2_0 || t == PTQ1_0:
			fork = append(fork, named)
		case t < mainlineCount && !ok:
			removed = append(removed, named)
		case !ok:
			unknown = append(unknown, strconv.FormatUint(uint64(id), 10))
		}
	}
	if len(unknown) > 0 {
		add("tensor type ids %s are unknown to every ggml build the guard knows (mainline 0-42, PrismML fork 142-143)",
			strings.Join(unknown, ", "))
	}
	if len(removed) > 0 {
		add("tensor types %s were removed from ggml: no build loads them from a file", strings.Join(removed, ", "))
	}
	if len(fork) > 0 && opt.Engine != Prism {
		add("tensor types %s are PrismML-fork types; mainline and llama.rn refuse them (the prism engine runs them)",
			strings.Join(fork, ", "))
	}

	// Shapes and byte sizes of the tensors whose type has a known layout; -1 marks an unknown size.
	sizes := make([]int64, len(h.tensors))
	var badRow, overflow []int
	for i, t := range h.tensors {
		sizes[i] = -1
		block, tsize, ok := layout(gguf.GGMLType(t.typ))
		if !ok {
			continue
		}
		row := uint64(1)
		if t.nd > 0 {
			row = uint64(t.ne[0])
		}
		if row%block != 0 {
			badRow = append(badRow, i)
			continue
		}
		hi, lo := bits.Mul64(t.nelem/block, tsize)
		if hi != 0 || lo > math.MaxInt64 {
			overflow = append(overflow, i)
			continue
		}
		sizes[i] = int64(lo)
	}
	if len(badRow) > 0 {
		t := h.tensors[badRow[0]]
		block, _, _ := layout(gguf.GGMLType(t.typ))
		add("tensor %q: %s rows of %d elements are not a whole number of %d-element blocks%s",
			t.name, TypeName(gguf.GGMLType(t.typ)), t.ne[0], block, andMore(len(badRow)))
	}
	if len(overflow) > 0 {
		t := h.tensors[overflow[0]]
		add("tensor %q: the byte size of %d %s elements overflows 63 bits%s",
			t.name, t.nelem, TypeName(gguf.GGMLType(t.typ)), andMore(len(overflow)))
	}

	// The data section: where it starts and how long it is.
	var dataLen uint64
	dataPast := len(h.tensors) > 0 && h.dataOffset > rep.FileSize
	if dataPast {
		add("the data section starts at byte %d (header end %d padded to %d), past the end of the %d-byte file",
			h.dataOffset, h.end, h.alignment, rep.FileSize)
	} else {
		dataLen = rep.FileSize - h.dataOffset
	}
	order := make([]int, len(h.tensors)) // tensor indexes by offset, then file order
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ta, tb := h.tensors[a].offset, h.tensors[b].offset
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return 0
	})

	legacy := legacyQ2(h, sizes, order, dataLen, dataPast)
	if len(legacy) > 0 {
		add("%d Q2_0 tensors (the first %q) span fewer bytes than the group-64 layout needs (nelements/64*18): "+
			"legacy group-128 Prism file, use *-Q2_0_g64.gguf or *-PQ2_0.gguf", len(legacy), h.tensors[legacy[0]].name)
	} else if !dataPast {
		for _, r := range layoutReasons(h, sizes, order, dataLen) {
			add("%s", r)
		}
	}

	if opt.Engine != Prism {
		for _, label := range []string{h.kv[keyName].str, h.kv[keyBasename].str, opt.FileName} {
			if bonsai2.MatchString(label) {
				add("Bonsai 2 weights (%q) are in a rotated basis and need the fork's Hadamard transform; "+
					"mainline loads the Q2_0 band silently and outputs gibberish", label)
				break
			}
		}
	}

	*why = append(*why, splitReasons(h, opt.FileName)...)
	ptqtp, ptqtpRep := ptqtpReasons(h, opt.Engine)
	*why = append(*why, ptqtp...)
	rep.PTQTP = ptqtpRep
	*why = append(*why, tokenizerReasons(h)...)
	rep.KVF16BytesPerToken = kvBytesPerToken(h)
	rep.Verdict = Play
	if len(*why) > 0 {
		rep.Verdict = Refuse
	}
}

// andMore returns " (N tensors in all)" for n > 1.
func andMore(n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" (%d tensors in all)", n)
}

// legacyQ2 returns, in offset order, the type-42 tensors whose span holds a group-128 Q2_0 tensor (34 bytes per 128
// elements) but not a group-64 one (18 bytes per 64). A tensor's span runs to the next offset, or for the last to
// the end of the file.
func legacyQ2(h *header, sizes []int64, order []int, dataLen uint64, dataPast bool) []int {
	var out []int
	for k, i := range order {
		t := h.tensors[i]
		if gguf.GGMLType(t.typ) != gguf.Q2_0 || sizes[i] < 0 || t.nelem%128 != 0 {
			continue
		}
		var span uint64
		switch {
		case k+1 < len(order):
			span = h.tensors[order[k+1]].offset - t.offset
		case !dataPast && t.offset <= dataLen:
			span = dataLen - t.offset
		default:
			continue
		}
		if span < uint64(sizes[i]) && span >= t.nelem/128*34 {
			out = append(out, i)
		}
	}
	return out
}

// layoutReasons checks tensor offsets as the reference's gguf reader does: each a multiple of the alignment, no two
// tensors overlapping, none past the end of the file, and all packed in file order (each at the previous one's end
// padded to the alignment, the first at 0). It reports the first offender of each kind, and packing only when
// nothing else is wrong. Overlap, end and packing need every size, so they are skipped when one is unknown (a type
// refused above).
func layoutReasons(h *header, sizes []int64, order []int, dataLen uint64) []string {
	var out []string
	for _, t := range h.tensors {
		if t.offset%h.alignment != 0 {
			out = append(out, fmt.Sprintf("tensor %q: offset %d is not a multiple of the alignment %d", t.name, t.offset, h.alignment))
			break
		}
	}
	if slices.Contains(sizes, -1) {
		return out
	}
	for k := 0; k+1 < len(order); k++ {
		a, b := order[k], order[k+1]
		ta, tb := h.tensors[a], h.tensors[b]
		if uint64(sizes[a]) > tb.offset-ta.offset {
			out = append(out, fmt.Sprintf("tensors %q and %q overlap: %q takes bytes %d to %d of the data section, %q starts at %d",
				ta.name, tb.name, ta.name, ta.offset, ta.offset+uint64(sizes[a]), tb.name, tb.offset))
			break
		}
	}
	for i, t := range h.tensors {
		if s := uint64(sizes[i]); s > dataLen || t.offset > dataLen-s {
			out = append(out, fmt.Sprintf("tensor %q runs past the end of the file: %d bytes at offset %d of a %d-byte data section at byte %d",
				t.name, s, t.offset, dataLen, h.dataOffset))
			break
		}
	}
	if len(out) > 0 {
		return out
	}
	next := uint64(0)
	for i, t := range h.tensors {
		if t.offset != next {
			return []string{fmt.Sprintf("tensor %q: offset %d, expected %d: the reference requires tensor data packed in file order, "+
				"each tensor at the previous one's end padded to the alignment %d", t.name, t.offset, next, h.alignment)}
		}
		next = t.offset + (uint64(sizes[i])+h.alignment-1)&^(h.alignment-1) // offset+size <= dataLen < 2^63
	}
	return nil
}

// The special-token id keys llama-vocab.cpp reads (each must be a u32), and those whose value must lie inside the
// vocabulary.
var (
	specialIDKeys = []string{"bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "mask",
		"fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep", "prefix", "suffix", "middle"}
	inVocabKeys = map[string]bool{"bos": true, "eos": true, "unknown": true, "padding": true}
)

// noToken is LLAMA_TOKEN_NULL (-1) as a u32: an id that names no token.
const noToken = math.MaxUint32

// tokenizerReasons checks the tokenizer metadata as llama-vocab.cpp reads it: tokens and merges are arrays of str,
// scores an array of f32 or i32 and token_type an array of i32, the last two at least as long as tokens; every
// special-token id is a u32, and bos, eos, unk and pad lie inside the vocabulary or are 0xFFFFFFFF.
func tokenizerReasons(h *header) []string {
	var out []string
	nVocab := uint64(0)
	hasVocab := false
	if v, ok := h.kv["tokenizer.ggml.tokens"]; ok {
		if v.typ != gguf.TypeArray || v.elem != gguf.String {
			out = append(out, fmt.Sprintf("tokenizer.ggml.tokens is %s, want an array of str", v.describe()))
		} else {
			nVocab, hasVocab = v.n, true
		}
	}
	for _, k := range []struct {
		key   string
		elems []gguf.ValueType
	}{
		{"tokenizer.ggml.scores", []gguf.ValueType{gguf.Float32, gguf.Int32}},
		{"tokenizer.ggml.token_type", []gguf.ValueType{gguf.Int32}},
		{"tokenizer.ggml.merges", []gguf.ValueType{gguf.String}},
	} {
		v, ok := h.kv[k.key]
		if !ok {
			continue
		}
		if v.typ != gguf.TypeArray || !slices.Contains(k.elems, v.elem) {
			want := "an array of " + k.elems[0].String()
			if len(k.elems) > 1 {
				want += " or " + k.elems[1].String()
			}
			out = append(out, fmt.Sprintf("%s is %s, want %s", k.key, v.describe(), want))
		} else if hasVocab && k.key != "tokenizer.ggml.merges" && v.n < nVocab {
			out = append(out, fmt.Sprintf("%s has %d entries for %d tokens", k.key, v.n, nVocab))
		}
	}
	for _, name := range specialIDKeys {
		key := "tokenizer.ggml." + name + "_token_id"
		v, ok := h.kv[key]
		switch {
		case !ok:
		case v.typ != gguf.Uint32:
			out = append(out, fmt.Sprintf("%s is %s, want u32", key, v.describe()))
		case inVocabKeys[name] && hasVocab && v.bits != noToken && v.bits >= nVocab:
			out = append(out, fmt.Sprintf("%s %d is outside the vocabulary of %d tokens", key, v.bits, nVocab))
		}
	}
	return out
}

// kvBytesPerToken computes Report.KVF16BytesPerToken.
func kvBytesPerToken(h *header) *uint64 {
	arch := h.kv[keyArch].str
	get := func(k string) (uint64, bool) {
		v, ok := h.kv[arch+"."+k]
		if !ok {
			return 0, false
		}
		return v.uint()
	}
	layers, ok1 := get("block_count")
	heads, ok2 := get("attention.head_count_kv")
	if !ok1 || !ok2 {
		return nil
	}
	key, ok := get("attention.key_length")
	val := key
	if ok {
		if v, okv := get("attention.value_length"); okv {
			val = v
		}
	} else {
		embd, ok1 := get("embedding_length")
		nh, ok2 := get("attention.head_count")
		if !ok1 || !ok2 || nh == 0 {
			return nil
		}
		key, val = embd/nh, embd/nh
	}
	n, carry := bits.Add64(key, val, 0)
	for _, f := range []uint64{layers, heads, 2} {
		var hi uint64
		hi, n = bits.Mul64(n, f)
		carry |= hi
	}
	if carry != 0 {
		return nil
	}
	return &n
}

// splitReasons refuses the parts of a split model (llama_model_loader reads split.count and split.no as u16 and
// then loads every part): a split.count or split.no of another type is refused with llama.cpp's words ("key %s has
// wrong type %s but expected type %s"), and a model in more than one part is refused naming the parts it needs
// (llama_split_path's "<prefix>-%05d-of-%05d.gguf" from fileName, as llama_get_list_splits derives them), since
// bankml loads one file: serving the first part as if it were the whole model is what must never happen.
func splitReasons(h *header, fileName string) []string {
	var why []string
	for _, key := range []string{keySplitCount, keySplitNo} {
		if v, ok := h.kv[key]; ok && v.typ != gguf.Uint16 {
			why = append(why, fmt.Sprintf("key %s has wrong type %s but expected type %s", key, v.describe(), gguf.Uint16))
		}
	}
	count, ok := h.kv[keySplitCount]
	if !ok || count.typ != gguf.Uint16 || count.bits <= 1 {
		return why
	}
	n := int(count.bits)
	no := 0
	if v, ok := h.kv[keySplitNo]; ok && v.typ == gguf.Uint16 {
		no = int(v.bits)
	}
	part := fmt.Sprintf("-%05d-of-%05d.gguf", no+1, n)
	prefix, named := strings.CutSuffix(fileName, part)
	parts := "named <prefix>-00001-of-" + fmt.Sprintf("%05d", n) + ".gguf and on"
	if named && prefix != "" {
		parts = fmt.Sprintf("%s-%05d-of-%05d.gguf … %s-%05d-of-%05d.gguf", prefix, 1, n, prefix, n, n)
	}
	return append(why, fmt.Sprintf("split model: this file is part %d of %d (split.count %d, split.no %d) and bankml loads "+
		"a model from one file: merge the %d parts (%s) into one with llama.cpp's llama-gguf-split --merge",
		no+1, n, n, no, n, parts))
}
