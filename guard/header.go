package guard

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"

	"github.com/bankml/bankml/gguf"
)

// Limits of the reference (ggml/src/gguf.cpp, ggml.h of llama.cpp v0.5.0), as the gguf package applies them, and
// the least bytes each item of a header takes (used to bound counts before anything is read or allocated).
const (
	maxString = 1 << 30 // GGUF_MAX_STRING_LENGTH
	maxArray  = 1 << 30 // GGUF_MAX_ARRAY_ELEMENTS
	maxDepth  = 64      // arrays of arrays, deepest nesting accepted (as package gguf)
	maxName   = 64      // GGML_MAX_NAME: a tensor name needs len < 64
	maxDims   = 4       // GGML_MAX_DIMS

	minKV     = 8 + 4 + 1     // key length, value type, a one-byte value
	minTensor = 8 + 4 + 4 + 8 // name length, n_dims, type, offset
	minArray  = 4 + 8         // element type, length
	minString = 8             // length

	readChunk = 64 << 10 // bytes read ahead at most per read, never past the header's proven extent
)

// valueSizes holds the encoded size of each fixed-size metadata value type (gguf_type 0..12); 0 for str and arr.
var valueSizes = [...]uint64{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

// keptStrings are the string values the guard reads; every other string is skipped unread.
var keptStrings = map[string]bool{keyArch: true, keyName: true, keyBasename: true}

// value is one top-level metadata value as the guard keeps it: scalars whole, the strings of keptStrings, and of
// arrays only their element type and length.
type value struct {
	typ  gguf.ValueType
	bits uint64 // fixed-size scalars: the integer zero- or sign-extended to 64 bits, or the float's bits
	str  string // a kept string
	elem gguf.ValueType
	n    uint64 // arrays: element type and count
}

// uint returns an integer value of any width that is not negative.
func (v value) uint() (uint64, bool) {
	switch v.typ {
	case gguf.Uint8, gguf.Uint16, gguf.Uint32, gguf.Uint64:
		return v.bits, true
	case gguf.Int8, gguf.Int16, gguf.Int32, gguf.Int64:
		return v.bits, int64(v.bits) >= 0
	}
	return 0, false
}

// describe names the value's type for a reason: "u32", "str", "an array of i32".
func (v value) describe() string {
	if v.typ == gguf.TypeArray {
		return "an array of " + v.elem.String()
	}
	return v.typ.String()
}

// tensor is one tensor info as stored: the type id is raw (any uint32) and judged later.
type tensor struct {
	name   string
	nd     int
	ne     [maxDims]int64
	typ    uint32
	offset uint64
	nelem  uint64 // product of ne[:nd], at most MaxInt64
}

// header is everything the guard reads from a file: the fixed fields, the metadata, the tensor infos.
type header struct {
	version    uint32
	kv         map[string]value
	tensors    []tensor
	alignment  uint64
	end        uint64 // bytes: the end of the last tensor info
	dataOffset uint64 // end padded to alignment when there are tensors, else end
}

// needMore reports a header that runs past the bytes available: the header needs need bytes at least.
type needMore struct {
	need, have uint64
	what       string
	off        uint64
}

func (e *needMore) Error() string {
	return fmt.Sprintf("header truncated: %s at offset %d needs a header of at least %d bytes, %d are available",
		e.what, e.off, e.need, e.have)
}

// ioError is a failed read (not the end of the data): the guard reports it as an error, not a verdict.
type ioError struct{ err error }

func (e *ioError) Error() string { return e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

// hostile is a header no well-formed file has; its text becomes a refusal reason.
func hostile(format string, a ...any) error { return fmt.Errorf(format, a...) }

// reader reads a header front to back from an io.ReaderAt. It reads only bytes the header's own counts and lengths
// prove to be header: floor is the least end of a well-formed header given what has been read, and no read goes
// past it, so tensor data is never read. Skipped items (token strings, numeric arrays) are not read at all.
type reader struct {
	ra          io.ReaderAt
	size, limit uint64 // the file's size; the largest header accepted
	avail       uint64 // bytes readable: size, or less once ra reports io.EOF early
	off         uint64 // the next byte
	floor       uint64 // least end of the header, > off only by what is proven to follow
	after       uint64 // least bytes of header after the current item
	buf         []byte // bytes [bufOff, bufOff+len(buf)) of the file
	bufOff      uint64
}

// expect records that the next n bytes are header, followed by r.after more at least. It refuses a header that
// would pass the limit and asks for more bytes when it passes the end of the file. n must be at most 2^40.
func (r *reader) expect(n uint64, what string) error {
	end := r.off + n + r.after // no overflow: off <= limit < 2^62, n <= 2^40, after < 2^37
	if end <= r.floor {
		return nil
	}
	r.floor = end
	if end > r.limit {
		return hostile("%s at offset %d cannot fit in the file: the header would need at least %d bytes, over the guard's header limit of %d bytes",
			what, r.off, end, r.limit)
	}
	if end > r.avail {
		return &needMore{need: end, have: r.avail, what: what, off: r.off}
	}
	return nil
}

// count records n items of at least min bytes each, as expect does.
func (r *reader) count(n, min uint64, what string) error {
	if n > r.limit/min {
		return hostile("%s at offset %d cannot fit in the file: %d items of at least %d bytes each, over the guard's header limit of %d bytes",
			what, r.off, n, min, r.limit)
	}
	return r.expect(n*min, what)
}

// take returns the next n bytes (valid until the next call).
func (r *reader) take(n uint64, what string) ([]byte, error) {
	if err := r.expect(n, what); err != nil {
		return nil, err
	}
	if r.off < r.bufOff || r.off+n > r.bufOff+uint64(len(r.buf)) {
		if err := r.fill(n, what); err != nil {
			return nil, err
		}
	}
	s := r.buf[r.off-r.bufOff : r.off-r.bufOff+n]
	r.off += n
	return s, nil
}

// fill reads at least n bytes at r.off, and ahead up to readChunk bytes but never past the floor.
func (r *reader) fill(n uint64, what string) error {
	want := max(n, min(readChunk, r.floor-r.off))
	if uint64(cap(r.buf)) < want {
		r.buf = make([]byte, max(want, readChunk))
	}
	b := r.buf[:want]
	got, err := r.ra.ReadAt(b, int64(r.off))
	if uint64(got) < n && want > n { // the read ahead failed: read only what is needed
		b = b[:n]
		got, err = r.ra.ReadAt(b, int64(r.off))
	}
	if uint64(got) < n {
		if err == nil || errors.Is(err, io.EOF) { // fewer bytes than the size said: a prefix of the file
			r.avail = r.off + uint64(got)
			return &needMore{need: max(r.floor, r.off+n), have: r.avail, what: what, off: r.off}
		}
		return &ioError{fmt.Errorf("guard: reading %d header bytes at offset %d: %w", n, r.off, err)}
	}
	r.buf = b[:got]
	r.bufOff = r.off
	return nil
}

// skip passes over the next n bytes without reading them.
func (r *reader) skip(n uint64, what string) error {
	if err := r.expect(n, what); err != nil {
		return err
	}
	r.off += n
	return nil
}

func (r *reader) u32(what string) (uint32, error) {
	b, err := r.take(4, what)
	if err != nil {
		return 0, err
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, nil
}

func (r *reader) u64(what string) (uint64, error) {
	b, err := r.take(8, what)
	if err != nil {
		return 0, err
	}
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56, nil
}

// strLen reads a string's length and records its bytes as header. what names the string (it is not formatted
// unless there is an error: this runs once per token).
func (r *reader) strLen(what string) (uint64, error) {
	n, err := r.u64(what)
	if err != nil {
		return 0, err
	}
	if n > maxString {
		return 0, hostile("%s length %d at offset %d is over the reference's limit of %d bytes", what, n, r.off-8, maxString)
	}
	return n, r.expect(n, what)
}

// str reads a string whole.
func (r *reader) str(what string) (string, error) {
	n, err := r.strLen(what)
	if err != nil {
		return "", err
	}
	b, err := r.take(n, what)
	return string(b), err
}

// readHeader reads the header of a file of size bytes from ra, refusing headers over limit bytes. Its error is a
// *needMore, an *ioError, or a hostile header (any other error).
func readHeader(ra io.ReaderAt, size, limit uint64) (*header, error) {
	r := &reader{ra: ra, size: size, limit: limit, avail: size}
	h := &header{kv: map[string]value{}}
	if size < 4 { // too short even for the magic: refuse unless what is there starts like "GGUF"
		b := make([]byte, size)
		n, err := ra.ReadAt(b, 0)
		if n < len(b) && err != nil && !errors.Is(err, io.EOF) {
			return h, &ioError{fmt.Errorf("guard: reading the magic: %w", err)}
		}
		if !strings.HasPrefix("GGUF", string(b[:n])) { // what the bytes are depends on how many r holds: not quoted
			return h, hostile("bad magic: the %d-byte file does not start like \"GGUF\"", size)
		}
	}
	magic, err := r.take(4, "magic")
	if err != nil {
		return h, err
	}
	if string(magic) != "GGUF" {
		return h, hostile("bad magic %q, want \"GGUF\"", magic)
	}
	if h.version, err = r.u32("version"); err != nil {
		return h, err
	}
	switch v := h.version; {
	case v&0xFFFF == 0 && v != 0:
		return h, hostile("big-endian file: the version reads %#x (%d byte-swapped); only little-endian files are supported",
			v, bits.ReverseBytes32(v))
	case v != 2 && v != 3:
		return h, hostile("unsupported GGUF version %d: only versions 2 and 3 are supported", v)
	}
	nTensors, err := r.u64("tensor count")
	if err != nil {
		return h, err
	}
	nKV, err := r.u64("metadata count")
	if err != nil {
		return h, err
	}
	if err := r.count(nKV, minKV, fmt.Sprintf("metadata count %d", nKV)); err != nil {
		return h, err
	}
	if err := r.count(nTensors, minTensor, fmt.Sprintf("tensor count %d", nTensors)); err != nil {
		return h, err
	}
	if err := r.expect(nKV*minKV+nTensors*minTensor, fmt.Sprintf("%d metadata and %d tensors", nKV, nTensors)); err != nil {
		return h, err
	}
	for i := range nKV {
		r.after = (nKV-i-1)*minKV + nTensors*minTensor
		if err := r.kv(h, i); err != nil {
			return h, err
		}
	}
	if err := h.setAlignment(); err != nil {
		return h, err
	}
	names := map[string]uint64{}
	for i := range nTensors {
		r.after = (nTensors - i - 1) * minTensor
		t, err := r.tensor(i, names)
		if err != nil {
			return h, err
		}
		h.tensors = append(h.tensors, t)
	}
	h.end = r.off
	h.dataOffset = h.end
	if nTensors > 0 {
		h.dataOffset = (h.end + h.alignment - 1) &^ (h.alignment - 1) // alignment < 2^32, end < 2^62: no overflow
	}
	return h, nil
}

// kv reads the i-th metadata pair.
func (r *reader) kv(h *header, i uint64) error {
	key, err := r.str(fmt.Sprintf("metadata %d key", i))
	if err != nil {
		return err
	}
	if key == "" {
		return hostile("metadata %d has an empty key", i)
	}
	if _, dup := h.kv[key]; dup {
		return hostile("duplicate metadata key %q (metadata %d)", key, i)
	}
	t, err := r.u32(fmt.Sprintf("key %q value type", key))
	if err != nil {
		return err
	}
	v, err := r.value(gguf.ValueType(t), key, keptStrings[key], 0)
	if err != nil {
		return err
	}
	h.kv[key] = v
	return nil
}

// value reads one value of type t for key; keep reads a string whole instead of skipping it; depth counts the
// enclosing arrays.
func (r *reader) value(t gguf.ValueType, key string, keep bool, depth int) (value, error) {
	v := value{typ: t}
	what := fmt.Sprintf("key %q %s value", key, t)
	switch {
	case t == gguf.String && keep:
		s, err := r.str(what)
		v.str = s
		return v, err
	case t == gguf.String:
		n, err := r.strLen(what)
		if err != nil {
			return v, err
		}
		return v, r.skip(n, what)
	case t == gguf.TypeArray:
		return r.array(key, fmt.Sprintf("key %q array", key), depth+1)
	case uint32(t) < uint32(len(valueSizes)):
		b, err := r.take(valueSizes[t], what)
		if err != nil {
			return v, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			v.bits = v.bits<<8 | uint64(b[i])
		}
		if t == gguf.Int8 || t == gguf.Int16 || t == gguf.Int32 { // sign-extend
			shift := 64 - 8*len(b)
			v.bits = uint64(int64(v.bits<<shift) >> shift)
		}
		return v, nil
	}
	return v, hostile("key %q: unknown value type id %d at offset %d", key, uint32(t), r.off-4)
}

// array reads an array at nesting depth depth (1 for a top-level array), keeping its element type and length. what
// names the array in errors; it is formatted once per key, as arrays of arrays can be many.
func (r *reader) array(key, what string, depth int) (value, error) {
	v := value{typ: gguf.TypeArray}
	if depth > maxDepth {
		return v, hostile("%s: arrays nested more than %d deep", what, maxDepth)
	}
	et, err := r.u32(what)
	if err != nil {
		return v, err
	}
	n, err := r.u64(what)
	if err != nil {
		return v, err
	}
	v.elem, v.n = gguf.ValueType(et), n
	if n > maxArray {
		return v, hostile("%s: length %d at offset %d is over the reference's limit of %d", what, n, r.off-8, maxArray)
	}
	switch {
	case v.elem == gguf.String:
		if err := r.count(n, minString, what); err != nil {
			return v, err
		}
		elem := what + " element"
		outer := r.after
		defer func() { r.after = outer }()
		for i := range n {
			r.after = outer + (n-i-1)*minString // the elements still to come: keeps the floor tight
			l, err := r.strLen(elem)
			if err != nil {
				return v, err
			}
			if err := r.skip(l, elem); err != nil {
				return v, err
			}
		}
	case v.elem == gguf.TypeArray:
		if err := r.count(n, minArray, what); err != nil {
			return v, err
		}
		outer := r.after
		defer func() { r.after = outer }()
		for i := range n {
			r.after = outer + (n-i-1)*minArray
			if _, err := r.array(key, what, depth+1); err != nil {
				return v, err
			}
		}
	case uint32(v.elem) < uint32(len(valueSizes)):
		size := valueSizes[v.elem]
		if err := r.count(n, size, what); err != nil {
			return v, err
		}
		return v, r.skip(n*size, what)
	default:
		return v, hostile("%s: unknown element type id %d at offset %d", what, et, r.off-12)
	}
	return v, nil
}

// setAlignment applies general.alignment, which must be a u32 nonzero power of two (default 32), as in the
// reference.
func (h *header) setAlignment() error {
	h.alignment = 32
	v, ok := h.kv[gguf.KeyAlignment]
	if !ok {
		return nil
	}
	if v.typ != gguf.Uint32 {
		return hostile("bad alignment: %s is %s, want u32", gguf.KeyAlignment, v.describe())
	}
	if v.bits == 0 || v.bits&(v.bits-1) != 0 {
		return hostile("bad alignment: %s = %d is not a nonzero power of two", gguf.KeyAlignment, v.bits)
	}
	h.alignment = v.bits
	return nil
}

// tensor reads the i-th tensor info; names maps the names seen to their index.
func (r *reader) tensor(i uint64, names map[string]uint64) (tensor, error) {
	var t tensor
	n, err := r.u64(fmt.Sprintf("tensor %d name length", i))
	if err != nil {
		return t, err
	}
	switch {
	case n == 0:
		return t, hostile("tensor %d has an empty name", i)
	case n >= maxName:
		return t, hostile("tensor %d: name of %d bytes, the reference's limit is %d", i, n, maxName-1)
	}
	b, err := r.take(n, fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return t, err
	}
	t.name = string(b)
	if j, dup := names[t.name]; dup {
		return t, hostile("duplicate tensor name %q (tensors %d and %d)", t.name, j, i)
	}
	names[t.name] = i
	nd, err := r.u32(fmt.Sprintf("tensor %q n_dims", t.name))
	if err != nil {
		return t, err
	}
	if nd > maxDims {
		return t, hostile("tensor %q has %d dimensions, at most %d", t.name, nd, maxDims)
	}
	t.nd = int(nd)
	if err := r.expect(uint64(nd)*8+4+8, fmt.Sprintf("tensor %q shape, type and offset", t.name)); err != nil {
		return t, err
	}
	t.nelem = 1
	for j := range t.nd {
		d, err := r.u64(fmt.Sprintf("tensor %q dimension %d", t.name, j))
		if err != nil {
			return t, err
		}
		t.ne[j] = int64(d)
		if t.ne[j] < 1 {
			return t, hostile("tensor %q: dimension %d is %d, must be at least 1", t.name, j, t.ne[j])
		}
		hi, lo := bits.Mul64(t.nelem, d)
		if hi != 0 || lo > math.MaxInt64 {
			return t, hostile("tensor %q: the element count of shape %v overflows 63 bits", t.name, t.ne[:j+1])
		}
		t.nelem = lo
	}
	if t.typ, err = r.u32(fmt.Sprintf("tensor %q type", t.name)); err != nil {
		return t, err
	}
	t.offset, err = r.u64(fmt.Sprintf("tensor %q offset", t.name))
	return t, err
}
