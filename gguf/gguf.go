package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Sentinel errors. Every error from Parse and Open wraps exactly one of them (Open may instead return an
// operating-system error) and adds what was wrong and where.
var (
	ErrBadMagic    = errors.New("bad magic")                            // the file does not start with "GGUF"
	ErrBigEndian   = errors.New("big-endian file")                      // the version reads byte-swapped
	ErrVersion     = errors.New("unsupported version")                  // a version other than 2 or 3
	ErrTruncated   = errors.New("truncated")                            // a field, count or length runs past the end
	ErrUnknownType = errors.New("unknown value type")                   // a gguf_type id outside 0..12
	ErrLimit       = errors.New("over a limit of the reference")        // string, array, nesting or name too long
	ErrEmptyName   = errors.New("empty name")                           // an empty key or tensor name
	ErrDuplicate   = errors.New("duplicate name")                       // a key or tensor name seen before
	ErrAlignment   = errors.New("bad alignment")                        // general.alignment or a tensor offset
	ErrTensorType  = errors.New("unknown or removed ggml type")         // a ggml_type id with no block size
	ErrDims        = errors.New("bad dimensions")                       // more than 4 dims, or a dim below 1
	ErrShape       = errors.New("row not a multiple of the block size") // ne[0] % block size != 0
	ErrOverflow    = errors.New("size overflow")                        // element count or byte size overflows
	ErrLayout      = errors.New("tensor data not packed in order")      // an offset other than the reference's
	ErrOutOfBounds = errors.New("tensor past the end of the data")      // data runs past the end of the file
	ErrWrongType   = errors.New("wrong value type")                     // a typed Array accessor on other elements
)

// Limits, from ggml/src/gguf.cpp and ggml/include/ggml.h of the reference, except maxDepth (the reference allows no
// nesting at all).
const (
	defaultAlignment = 32      // GGUF_DEFAULT_ALIGNMENT
	maxString        = 1 << 30 // GGUF_MAX_STRING_LENGTH, bytes
	maxArray         = 1 << 30 // GGUF_MAX_ARRAY_ELEMENTS
	maxName          = 64      // GGML_MAX_NAME: a tensor name needs len < 64 (it is stored NUL-terminated)
	maxDims          = 4       // GGML_MAX_DIMS
	maxDepth         = 64      // arrays of arrays, deepest nesting accepted

	// The fewest bytes one item can take in a file, used to bound counts before anything is allocated.
	minKVBytes     = 8 + 4 + 1     // key length, value type, a one-byte value
	minTensorBytes = 8 + 4 + 4 + 8 // name length, n_dims, type, offset
	minArrayBytes  = 4 + 8         // element type, length
	minStringBytes = 8             // length
)

// KeyAlignment is the metadata key that sets the data alignment (GGUF_KEY_GENERAL_ALIGNMENT).
const KeyAlignment = "general.alignment"

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string   // unique, 1 to 63 bytes
	Ne     []int64  // the dimensions as stored (0 to 4 of them, each >= 1); Ne[0] is the row length (fastest)
	Type   GGMLType // the data type
	Offset uint64   // the start of the data in bytes, relative to File.DataOffset
	Size   uint64   // the length of the data in bytes: NElements/BlockSize*TypeSize
}

// NElements returns the number of elements, the product of Ne (1 for a tensor with no dimensions).
func (t *TensorInfo) NElements() int64 {
	n := int64(1)
	for _, d := range t.Ne {
		n *= d
	}
	return n
}

// File is a parsed GGUF file. Its exported fields are read-only after Parse.
type File struct {
	Version    uint32       // 2 or 3
	KVs        []KV         // metadata, in file order
	Tensors    []TensorInfo // tensor infos, in file order
	Alignment  uint64       // bytes: general.alignment, or 32 when absent
	DataOffset uint64       // bytes from the file start to the data section: the header end padded to Alignment (unpadded if no tensors)
	FileSize   uint64       // bytes

	keys   map[string]int // key -> index in KVs
	names  map[string]int // tensor name -> index in Tensors
	data   []byte         // the whole file; nil after Close
	closer func() error   // releases data (munmap), or nil
}

// Parse decodes a GGUF file held in data and checks it. The File keeps data (without copying it) for TensorData;
// data must not change while the File is in use. Errors name the problem and where it is and wrap one of the
// sentinel errors, e.g. ErrTruncated.
//
// Like the reference's gguf_init_from_reader (ggml/src/gguf.cpp), Parse:
//   - accepts versions 2 and 3 only, and names a byte-swapped (big-endian) version as such;
//   - requires "general.alignment", when present, to be of type u32 and a nonzero power of two (default 32);
//   - rejects empty and duplicate keys, duplicate tensor names, tensor names of 64 bytes or more, more than 4
//     dimensions, element counts and byte sizes that overflow, unknown and removed ggml types, and rows whose
//     length is not a multiple of the type's block size;
//   - requires tensor data to be packed in file order: each offset is the previous offset plus the previous
//     size padded to the alignment (the first is 0), which also makes every offset a multiple of the alignment;
//   - pads the end of the header to the alignment to find the data section only when there are tensors;
//   - reads a bool as true for any nonzero byte;
//   - caps a string at 1 GiB and an array at 2^30 elements.
//
// Where it deliberately differs from the reference:
//   - Arrays of arrays are accepted (the specification allows them; the reference rejects them), nested at most
//     64 deep.
//   - A dimension of zero is rejected (the reference accepts zero-element tensors), and so is an empty tensor name.
//   - Every tensor must lie inside the file (the reference's gguf reader leaves that to the model loader).
//   - Before anything is allocated for a count, the count is checked against the bytes that remain (each element
//     needs a known minimum number of bytes), so a lying header fails with ErrTruncated instead of allocating.
//     Parse never panics on any input (FuzzParse).
func Parse(data []byte) (*File, error) {
	p := &parser{b: data}
	f := &File{FileSize: uint64(len(data)), keys: map[string]int{}, names: map[string]int{}, data: data}
	if err := p.header(f); err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	for i := range cap(f.KVs) {
		if err := p.kv(f, i); err != nil {
			return nil, err
		}
	}
	if err := f.setAlignment(); err != nil {
		return nil, err
	}
	for i := range cap(f.Tensors) {
		if err := p.tensor(f, i); err != nil {
			return nil, err
		}
	}
	if err := f.layout(uint64(p.off)); err != nil {
		return nil, err
	}
	return f, nil
}

// parser reads little-endian fields from b, front to back.
type parser struct {
	b   []byte
	off int
}

func (p *parser) remain() int { return len(p.b) - p.off }

// take returns the next n bytes, or ErrTruncated if fewer remain.
func (p *parser) take(n uint64, what string) ([]byte, error) {
	if n > uint64(p.remain()) {
		return nil, fmt.Errorf("%w: %s needs %d bytes at offset %d, %d remain", ErrTruncated, what, n, p.off, p.remain())
	}
	s := p.b[p.off : p.off+int(n)]
	p.off += int(n)
	return s, nil
}

func (p *parser) u32(what string) (uint32, error) {
	b, err := p.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *parser) u64(what string) (uint64, error) {
	b, err := p.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count checks that n items of at least min bytes each can fit in the bytes that remain, and that n is within
// limit, so that nothing sized by n is ever allocated for a file that cannot hold n items.
func (p *parser) count(n, min, limit uint64, what string) error {
	if n > uint64(p.remain())/min {
		return fmt.Errorf("%w: %s count %d at offset %d needs at least %d bytes each, %d remain",
			ErrTruncated, what, n, p.off, min, p.remain())
	}
	if n > limit {
		return fmt.Errorf("%w: %s count %d is over %d", ErrLimit, what, n, limit)
	}
	return nil
}

// str reads a string: a u64 length, then that many bytes, copied out of the file.
func (p *parser) str(what string) (string, error) {
	n, err := p.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(p.remain()) {
		return "", fmt.Errorf("%w: %s length %d at offset %d exceeds the %d bytes remaining",
			ErrTruncated, what, n, p.off-8, p.remain())
	}
	if n > maxString {
		return "", fmt.Errorf("%w: %s length %d is over %d", ErrLimit, what, n, maxString)
	}
	b, _ := p.take(n, what)
	return string(b), nil
}

// header reads the magic, version and the two counts, and sizes KVs and Tensors (by capacity) after checking
// the counts against the file.
func (p *parser) header(f *File) error {
	magic, err := p.take(4, "magic")
	if err != nil {
		return err
	}
	if string(magic) != "GGUF" {
		return fmt.Errorf("%w: %q, want \"GGUF\"", ErrBadMagic, magic)
	}
	if f.Version, err = p.u32("version"); err != nil {
		return err
	}
	switch v := f.Version; {
	case v == 0:
		return fmt.Errorf("%w: 0", ErrVersion)
	case v&0xFFFF == 0:
		return fmt.Errorf("%w: version reads %#x (%d byte-swapped); only little-endian files are supported",
			ErrBigEndian, v, bits.ReverseBytes32(v))
	case v != 2 && v != 3:
		return fmt.Errorf("%w: %d; only versions 2 and 3 are supported", ErrVersion, v)
	}
	nTensors, err := p.u64("tensor count")
	if err != nil {
		return err
	}
	nKV, err := p.u64("metadata count")
	if err != nil {
		return err
	}
	// Every KV and every tensor info follows, so both counts together must fit in what remains.
	if err := p.count(nKV, minKVBytes, math.MaxInt32, "metadata"); err != nil {
		return err
	}
	if err := p.count(nTensors, minTensorBytes, math.MaxInt32, "tensor"); err != nil {
		return err
	}
	if nKV*minKVBytes+nTensors*minTensorBytes > uint64(p.remain()) {
		return fmt.Errorf("%w: %d metadata and %d tensors need at least %d bytes at offset %d, %d remain",
			ErrTruncated, nKV, nTensors, nKV*minKVBytes+nTensors*minTensorBytes, p.off, p.remain())
	}
	f.KVs = make([]KV, 0, nKV)
	f.Tensors = make([]TensorInfo, 0, nTensors)
	return nil
}

// kv reads the i-th metadata pair.
func (p *parser) kv(f *File, i int) error {
	key, err := p.str("key")
	if err != nil {
		return fmt.Errorf("gguf: metadata %d: %w", i, err)
	}
	if key == "" {
		return fmt.Errorf("gguf: metadata %d: %w: empty key", i, ErrEmptyName)
	}
	if j, dup := f.keys[key]; dup {
		return fmt.Errorf("gguf: key %q: %w: metadata %d and %d", key, ErrDuplicate, j, i)
	}
	t, err := p.u32("value type")
	if err != nil {
		return fmt.Errorf("gguf: key %q: %w", key, err)
	}
	v, err := p.value(ValueType(t), 0)
	if err != nil {
		return fmt.Errorf("gguf: key %q: %w", key, err)
	}
	f.keys[key] = len(f.KVs)
	f.KVs = append(f.KVs, KV{Key: key, Value: v})
	return nil
}

// value reads one value of type t; depth counts the enclosing arrays.
func (p *parser) value(t ValueType, depth int) (Value, error) {
	switch {
	case t == String:
		s, err := p.str("string")
		return Value{Type: String, str: s}, err
	case t == TypeArray:
		a, err := p.array(depth + 1)
		return Value{Type: TypeArray, arr: a}, err
	case t.size() > 0:
		b, err := p.take(uint64(t.size()), t.String()+" value")
		if err != nil {
			return Value{}, err
		}
		return scalar(t, b), nil
	}
	return Value{}, fmt.Errorf("%w: id %d at offset %d", ErrUnknownType, uint32(t), p.off-4)
}

// array reads an array (element type, length, elements) at nesting depth depth (1 for a top-level array).
func (p *parser) array(depth int) (*Array, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: arrays nested more than %d deep", ErrLimit, maxDepth)
	}
	et, err := p.u32("array element type")
	if err != nil {
		return nil, err
	}
	n, err := p.u64("array length")
	if err != nil {
		return nil, err
	}
	a := &Array{ElemType: ValueType(et)}
	switch a.ElemType {
	case String:
		if err := p.count(n, minStringBytes, maxArray, "array of str"); err != nil {
			return nil, err
		}
		for i := range n {
			s, err := p.str("string")
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			a.strs = append(a.strs, s)
		}
	case TypeArray:
		if err := p.count(n, minArrayBytes, maxArray, "array of arr"); err != nil {
			return nil, err
		}
		for i := range n {
			e, err := p.array(depth + 1)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			a.arrs = append(a.arrs, e)
		}
	default:
		size := uint64(a.ElemType.size())
		if size == 0 {
			return nil, fmt.Errorf("%w: array element type id %d at offset %d", ErrUnknownType, et, p.off-12)
		}
		if err := p.count(n, size, maxArray, "array of "+a.ElemType.String()); err != nil {
			return nil, err
		}
		b, _ := p.take(n*size, "array")
		a.raw = bytes.Clone(b)
	}
	a.Len = int(n)
	return a, nil
}

// setAlignment applies general.alignment, which must be a u32 nonzero power of two.
func (f *File) setAlignment() error {
	f.Alignment = defaultAlignment
	v, ok := f.Get(KeyAlignment)
	if !ok {
		return nil
	}
	if v.Type != Uint32 {
		return fmt.Errorf("gguf: key %q: %w: type %s, want u32", KeyAlignment, ErrAlignment, v.Type)
	}
	if v.bits == 0 || v.bits&(v.bits-1) != 0 {
		return fmt.Errorf("gguf: key %q: %w: %d is not a nonzero power of two", KeyAlignment, ErrAlignment, v.bits)
	}
	f.Alignment = v.bits
	return nil
}

// tensor reads the i-th tensor info and computes its size.
func (p *parser) tensor(f *File, i int) error {
	name, err := p.str("tensor name")
	if err != nil {
		return fmt.Errorf("gguf: tensor %d: %w", i, err)
	}
	if name == "" {
		return fmt.Errorf("gguf: tensor %d: %w: empty tensor name", i, ErrEmptyName)
	}
	if len(name) >= maxName {
		return fmt.Errorf("gguf: tensor %d: %w: name is %d bytes, must be under %d", i, ErrLimit, len(name), maxName)
	}
	if j, dup := f.names[name]; dup {
		return fmt.Errorf("gguf: tensor %q: %w: tensors %d and %d", name, ErrDuplicate, j, i)
	}
	t := TensorInfo{Name: name}
	if err := p.tensorBody(&t); err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	f.names[name] = len(f.Tensors)
	f.Tensors = append(f.Tensors, t)
	return nil
}

// tensorBody reads the dims, type and offset of t and sets its size, checking each for overflow.
func (p *parser) tensorBody(t *TensorInfo) error {
	nd, err := p.u32("n_dims")
	if err != nil {
		return err
	}
	if nd > maxDims {
		return fmt.Errorf("%w: %d dimensions, at most %d", ErrDims, nd, maxDims)
	}
	t.Ne = make([]int64, nd)
	n := uint64(1) // element count; stays <= MaxInt64
	for j := range t.Ne {
		d, err := p.u64("dimension")
		if err != nil {
			return err
		}
		t.Ne[j] = int64(d)
		if t.Ne[j] < 1 {
			return fmt.Errorf("%w: dimension %d is %d", ErrDims, j, t.Ne[j])
		}
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > math.MaxInt64 {
			return fmt.Errorf("%w: element count of shape %v overflows int64", ErrOverflow, t.Ne[:j+1])
		}
		n = lo
	}
	ty, err := p.u32("type")
	if err != nil {
		return err
	}
	t.Type = GGMLType(ty)
	block := uint64(t.Type.BlockSize())
	switch {
	case t.Type >= numGGMLTypes:
		return fmt.Errorf("%w: id %d", ErrTensorType, ty)
	case block == 0:
		return fmt.Errorf("%w: id %d (%s) was removed from ggml", ErrTensorType, ty, t.Type)
	}
	rowLen := uint64(1)
	if nd > 0 {
		rowLen = uint64(t.Ne[0])
	}
	if rowLen%block != 0 {
		return fmt.Errorf("%w: %s rows of %d elements, block size %d", ErrShape, t.Type, rowLen, block)
	}
	hi, size := bits.Mul64(n/block, uint64(t.Type.TypeSize()))
	if hi != 0 || size > math.MaxInt64 {
		return fmt.Errorf("%w: %d elements of %s overflow a byte size", ErrOverflow, n, t.Type)
	}
	t.Size = size
	t.Offset, err = p.u64("offset")
	return err
}

// layout finds the data section after a header of headerEnd bytes and checks that the tensors are packed in it as
// the reference requires: each at the previous one's end padded to the alignment, the first at 0, all inside the
// file.
func (f *File) layout(headerEnd uint64) error {
	f.DataOffset = headerEnd
	if len(f.Tensors) == 0 {
		return nil
	}
	f.DataOffset = pad(headerEnd, f.Alignment)
	if f.DataOffset > f.FileSize {
		return fmt.Errorf("gguf: %w: the data section starts at %d (header end %d padded to %d), past the end of the %d-byte file",
			ErrTruncated, f.DataOffset, headerEnd, f.Alignment, f.FileSize)
	}
	dataLen := f.FileSize - f.DataOffset
	next := uint64(0)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		switch {
		case t.Offset%f.Alignment != 0:
			return fmt.Errorf("gguf: tensor %q: %w: offset %d is not a multiple of %d", t.Name, ErrAlignment, t.Offset, f.Alignment)
		case t.Offset != next:
			return fmt.Errorf("gguf: tensor %q: %w: offset %d, expected %d", t.Name, ErrLayout, t.Offset, next)
		case t.Size > dataLen || t.Offset > dataLen-t.Size:
			return fmt.Errorf("gguf: tensor %q: %w: bytes %d to %d of a %d-byte data section at file offset %d",
				t.Name, ErrOutOfBounds, t.Offset, t.Offset+t.Size, dataLen, f.DataOffset)
		}
		next = t.Offset + pad(t.Size, f.Alignment) // no overflow: Offset+Size <= dataLen < 2^63, alignment < 2^32
	}
	return nil
}

// pad rounds n up to a multiple of align, a power of two (GGML_PAD).
func pad(n, align uint64) uint64 { return (n + align - 1) &^ (align - 1) }

// Close releases the memory map of a File from Open; TensorData views must not be used afterwards. Metadata stays
// valid. Close is safe to call more than once and on a File from Parse (where it only drops the reference to the
// bytes).
func (f *File) Close() error {
	f.data = nil
	c := f.closer
	f.closer = nil
	if c == nil {
		return nil
	}
	return c()
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.KVs[i].Value, true
}

// lookup returns the value of key, or a Value of a type no accessor accepts.
func (f *File) lookup(key string) Value {
	if v, ok := f.Get(key); ok {
		return v
	}
	return Value{Type: math.MaxUint32}
}

// GetString returns the value of key if it is a string.
func (f *File) GetString(key string) (string, bool) {
	return f.lookup(key).String()
}

// GetUint64 returns the value of key if it is a non-negative integer of any width (see Value.Uint64).
func (f *File) GetUint64(key string) (uint64, bool) {
	return f.lookup(key).Uint64()
}

// GetFloat64 returns the value of key if it is an f32 or f64.
func (f *File) GetFloat64(key string) (float64, bool) {
	return f.lookup(key).Float64()
}

// GetBool returns the value of key if it is a bool.
func (f *File) GetBool(key string) (bool, bool) {
	return f.lookup(key).Bool()
}

// GetArray returns the value of key if it is an array.
func (f *File) GetArray(key string) (*Array, bool) {
	return f.lookup(key).Array()
}

// Architecture returns general.architecture ("llama", "qwen3", ...), or "" if it is absent or not a string.
func (f *File) Architecture() string {
	s, _ := f.GetString("general.architecture")
	return s
}

// Tensor returns the info of the named tensor. The pointer is into f.Tensors.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.names[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the Size bytes of t's data: a view into the file's memory (read-only when mapped by Open),
// not a copy. It returns nil after Close, and for a t that does not fit this file.
func (f *File) TensorData(t *TensorInfo) []byte {
	if t == nil || f.data == nil || f.DataOffset > f.FileSize {
		return nil
	}
	dataLen := f.FileSize - f.DataOffset
	if t.Size > dataLen || t.Offset > dataLen-t.Size {
		return nil
	}
	start := f.DataOffset + t.Offset
	end := start + t.Size
	return f.data[start:end:end]
}

// DirectoryError is Open's error for a path that names a directory: "<path> is a directory, not a GGUF
// file" (commands that check their arguments before opening say it in the same words).
func DirectoryError(path string) error {
	return fmt.Errorf("%s is a directory, not a GGUF file", path)
}
