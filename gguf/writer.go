package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// Errors of the writer, in addition to the reader's sentinels it shares (ErrEmptyName, ErrDuplicate, ErrLimit,
// ErrAlignment, ErrUnknownType, ErrTensorType, ErrDims, ErrShape, ErrOverflow).
var (
	ErrBadValue = errors.New("malformed value")           // a nil array, or an Array whose Len disagrees with its elements
	ErrDataSize = errors.New("tensor data size mismatch") // data for a tensor of a different size, past the last tensor, or missing at Close
	ErrClosed   = errors.New("writer closed")             // a Write, WriteTensor or Close after Close
)

// writeBuffer is the size of the Writer's output buffer in bytes; larger writes of tensor data bypass it.
const writeBuffer = 1 << 20

// zeros is a source of padding bytes.
var zeros [4096]byte

// Writer writes one GGUF v3 file to an io.Writer as a stream: [NewWriter] validates the metadata and the tensor
// list, computes every tensor's offset and size and writes the whole header at once; tensor data follows through
// [Writer.Write] or [Writer.WriteTensor], one tensor after another in the order given, with the zero padding
// inserted by the Writer; [Writer.Close] checks that every byte was supplied. Besides the caller's metadata the
// Writer holds only the tensor list and a 1 MiB output buffer, so writing a model costs the same memory whatever
// its size.
//
// It follows the byte layout of the reference's writer (gguf_write_out in ggml/src/gguf.cpp): the header, the
// KVs, the tensor infos, zero padding to the alignment, then each tensor's bytes followed by zero padding to the
// alignment (the last tensor included). Deliberate differences:
//   - A file without tensors ends right after its tensor infos, unpadded, as gguf-py's writer does and as this
//     package's reader expects (the reference's writer pads it). The vocabulary files in ../shared/models are laid
//     out this way.
//   - Ne is written as given, trailing ones included; the reference writes ggml_n_dims dimensions, i.e. drops
//     trailing ones (pass shapes without them to match it byte for byte).
//   - Arrays of arrays are written (the reference refuses them).
//
// Everything [Parse] checks in a header is checked before the first byte is written, so a file the Writer
// completes always parses, with the KVs and tensor infos given.
//
// A Writer is not safe for concurrent use. After an error from the underlying io.Writer every later call returns
// that error.
type Writer struct {
	bw         *bufio.Writer
	tensors    []TensorInfo
	alignment  uint64
	dataOffset uint64
	fileSize   uint64

	cur     int    // index of the tensor whose data is being written; len(tensors) when all are done
	done    uint64 // bytes of tensors[cur] written so far
	pos     uint64 // bytes of tensor data (without padding) written so far
	total   uint64 // bytes of tensor data (without padding) in all
	written uint64 // bytes passed to bw so far
	err     error  // sticky error
	closed  bool
}

// NewWriter validates kvs and tensors, computes the layout and writes the header (magic, version 3, counts, KVs in
// the order given, tensor infos) and the padding after it to w. For tensors only Name, Ne and Type are read: Offset
// and Size are computed (see [Writer.Tensors]), packed in the given order as [Parse] requires, at the alignment set
// by a "general.alignment" KV (u32, a nonzero power of two) or 32 bytes.
//
// Validation follows the reader: keys nonempty and unique; values of known types, strings up to 1 GiB, arrays up to
// 2^30 elements and nested at most 64 deep, each Array consistent with its Len; tensor names of 1 to 63 bytes and
// unique; at most 4 dimensions, each at least 1; a known, not removed ggml type whose block size divides Ne[0];
// element counts and byte sizes that fit in int64. Errors wrap the matching sentinel (e.g. [ErrDuplicate],
// [ErrShape], [ErrBadValue]) and name the key or tensor; nothing is written when validation fails. An error from w
// is returned wrapped. The Writer buffers its output; [Writer.Close] flushes it but does not close w.
func NewWriter(w io.Writer, kvs []KV, tensors []TensorInfo) (*Writer, error) {
	if len(kvs) > math.MaxInt32 || len(tensors) > math.MaxInt32 {
		return nil, fmt.Errorf("gguf: %w: %d KVs and %d tensors, at most %d of each", ErrLimit, len(kvs), len(tensors), math.MaxInt32)
	}
	gw := &Writer{alignment: defaultAlignment}
	header := uint64(4 + 4 + 8 + 8)
	keys := make(map[string]int, len(kvs))
	for i, kv := range kvs {
		switch j, dup := keys[kv.Key]; {
		case kv.Key == "":
			return nil, fmt.Errorf("gguf: metadata %d: %w: empty key", i, ErrEmptyName)
		case dup:
			return nil, fmt.Errorf("gguf: key %q: %w: metadata %d and %d", kv.Key, ErrDuplicate, j, i)
		case len(kv.Key) > maxString:
			return nil, fmt.Errorf("gguf: metadata %d: %w: key of %d bytes is over %d", i, ErrLimit, len(kv.Key), maxString)
		}
		keys[kv.Key] = i
		n, err := valueSize(kv.Value, 0)
		if err != nil {
			return nil, fmt.Errorf("gguf: key %q: %w", kv.Key, err)
		}
		header += 8 + uint64(len(kv.Key)) + 4 + n
		if kv.Key == KeyAlignment {
			a, ok := kv.Value.Uint64()
			switch {
			case kv.Value.Type != Uint32:
				return nil, fmt.Errorf("gguf: key %q: %w: type %s, want u32", KeyAlignment, ErrAlignment, kv.Value.Type)
			case !ok || a == 0 || a&(a-1) != 0:
				return nil, fmt.Errorf("gguf: key %q: %w: %d is not a nonzero power of two", KeyAlignment, ErrAlignment, a)
			}
			gw.alignment = a
		}
	}
	gw.tensors = make([]TensorInfo, len(tensors))
	names := make(map[string]int, len(tensors))
	next := uint64(0) // offset of the next tensor in the data section
	for i, t := range tensors {
		if t.Name == "" {
			return nil, fmt.Errorf("gguf: tensor %d: %w: empty tensor name", i, ErrEmptyName)
		}
		if j, dup := names[t.Name]; dup {
			return nil, fmt.Errorf("gguf: tensor %q: %w: tensors %d and %d", t.Name, ErrDuplicate, j, i)
		}
		names[t.Name] = i
		size, err := tensorSize(t.Name, t.Ne, t.Type)
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if next > math.MaxInt64-size {
			return nil, fmt.Errorf("gguf: tensor %q: %w: the data section passes 2^63 bytes", t.Name, ErrOverflow)
		}
		gw.tensors[i] = TensorInfo{Name: t.Name, Ne: slices.Clone(t.Ne), Type: t.Type, Offset: next, Size: size}
		next = pad(next+size, gw.alignment)
		gw.total += size
		header += 8 + uint64(len(t.Name)) + 4 + 8*uint64(len(t.Ne)) + 4 + 8
	}
	gw.dataOffset = header
	if len(tensors) > 0 {
		gw.dataOffset = pad(header, gw.alignment)
	}
	if next > math.MaxInt64-gw.dataOffset {
		return nil, fmt.Errorf("gguf: %w: a file of %d header and %d data bytes", ErrOverflow, gw.dataOffset, next)
	}
	gw.fileSize = gw.dataOffset + next

	gw.bw = bufio.NewWriterSize(w, writeBuffer)
	gw.writeHeader(kvs)
	gw.pad(gw.dataOffset - header)
	if gw.err == nil && gw.written != gw.dataOffset {
		gw.err = fmt.Errorf("gguf: internal error: header of %d bytes, computed %d", gw.written, gw.dataOffset)
	}
	if gw.err != nil {
		return nil, fmt.Errorf("gguf: writing the header: %w", gw.err)
	}
	return gw, nil
}

// tensorSize checks a tensor's name, shape and type as Parse does and returns its byte size.
func tensorSize(name string, ne []int64, t GGMLType) (uint64, error) {
	if len(name) >= maxName {
		return 0, fmt.Errorf("%w: name of %d bytes, the reference allows %d", ErrLimit, len(name), maxName-1)
	}
	if len(ne) > maxDims {
		return 0, fmt.Errorf("%w: %d dimensions, at most %d", ErrDims, len(ne), maxDims)
	}
	n := uint64(1)
	for j, d := range ne {
		if d < 1 {
			return 0, fmt.Errorf("%w: dimension %d is %d", ErrDims, j, d)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%w: element count of shape %v overflows int64", ErrOverflow, ne[:j+1])
		}
		n = lo
	}
	block := uint64(t.BlockSize())
	switch {
	case t >= numGGMLTypes:
		return 0, fmt.Errorf("%w: id %d", ErrTensorType, uint32(t))
	case block == 0:
		return 0, fmt.Errorf("%w: id %d (%s) was removed from ggml", ErrTensorType, uint32(t), t)
	}
	rowLen := uint64(1)
	if len(ne) > 0 {
		rowLen = uint64(ne[0])
	}
	if rowLen%block != 0 {
		return 0, fmt.Errorf("%w: %s rows of %d elements, block size %d", ErrShape, t, rowLen, block)
	}
	hi, size := bits.Mul64(n/block, uint64(t.TypeSize()))
	if hi != 0 || size > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %d elements of %s overflow a byte size", ErrOverflow, n, t)
	}
	return size, nil
}

// valueSize checks v (inside depth enclosing arrays) and returns its encoded size in bytes, without the type id.
func valueSize(v Value, depth int) (uint64, error) {
	switch {
	case v.Type == String:
		if len(v.str) > maxString {
			return 0, fmt.Errorf("%w: string of %d bytes is over %d", ErrLimit, len(v.str), maxString)
		}
		return 8 + uint64(len(v.str)), nil
	case v.Type == TypeArray:
		if v.arr == nil {
			return 0, fmt.Errorf("%w: nil array", ErrBadValue)
		}
		return arraySize(v.arr, depth+1)
	case v.Type.size() > 0:
		return uint64(v.Type.size()), nil
	}
	return 0, fmt.Errorf("%w: id %d", ErrUnknownType, uint32(v.Type))
}

// arraySize checks a (at nesting depth depth, 1 for a top-level array) and returns its encoded size in bytes:
// element type, length and elements.
func arraySize(a *Array, depth int) (uint64, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: arrays nested more than %d deep", ErrLimit, maxDepth)
	}
	if a.Len < 0 || a.Len > maxArray {
		return 0, fmt.Errorf("%w: array of %d elements, at most %d", ErrLimit, a.Len, maxArray)
	}
	n := uint64(4 + 8)
	switch a.ElemType {
	case String:
		if len(a.strs) != a.Len || a.raw != nil || a.arrs != nil {
			return 0, fmt.Errorf("%w: array of str with Len %d holds %d strings", ErrBadValue, a.Len, len(a.strs))
		}
		for i, s := range a.strs {
			if len(s) > maxString {
				return 0, fmt.Errorf("element %d: %w: string of %d bytes is over %d", i, ErrLimit, len(s), maxString)
			}
			n += 8 + uint64(len(s))
		}
	case TypeArray:
		if len(a.arrs) != a.Len || a.raw != nil || a.strs != nil {
			return 0, fmt.Errorf("%w: array of arr with Len %d holds %d arrays", ErrBadValue, a.Len, len(a.arrs))
		}
		for i, e := range a.arrs {
			if e == nil {
				return 0, fmt.Errorf("element %d: %w: nil array", i, ErrBadValue)
			}
			m, err := arraySize(e, depth+1)
			if err != nil {
				return 0, fmt.Errorf("element %d: %w", i, err)
			}
			n += m
		}
	default:
		size := a.ElemType.size()
		if size == 0 {
			return 0, fmt.Errorf("%w: array element type id %d", ErrUnknownType, uint32(a.ElemType))
		}
		if len(a.raw) != a.Len*size || a.strs != nil || a.arrs != nil {
			return 0, fmt.Errorf("%w: array of %s with Len %d holds %d bytes", ErrBadValue, a.ElemType, a.Len, len(a.raw))
		}
		n += uint64(len(a.raw))
	}
	return n, nil
}

// out passes p to the buffered output, recording the first error.
func (w *Writer) out(p []byte) {
	if w.err != nil {
		return
	}
	n, err := w.bw.Write(p)
	w.written += uint64(n)
	if err != nil {
		w.err = err
	}
}

func (w *Writer) u32(v uint32) { w.out(binary.LittleEndian.AppendUint32(make([]byte, 0, 4), v)) }
func (w *Writer) u64(v uint64) { w.out(binary.LittleEndian.AppendUint64(make([]byte, 0, 8), v)) }

func (w *Writer) str(s string) {
	w.u64(uint64(len(s)))
	if w.err != nil {
		return
	}
	n, err := w.bw.WriteString(s)
	w.written += uint64(n)
	if err != nil {
		w.err = err
	}
}

// pad writes n zero bytes.
func (w *Writer) pad(n uint64) {
	for n > 0 && w.err == nil {
		m := min(n, uint64(len(zeros)))
		w.out(zeros[:m])
		n -= m
	}
}

// writeHeader writes everything before the data section's padding.
func (w *Writer) writeHeader(kvs []KV) {
	w.out([]byte("GGUF"))
	w.u32(3)
	w.u64(uint64(len(w.tensors)))
	w.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		w.str(kv.Key)
		w.u32(uint32(kv.Value.Type))
		w.value(kv.Value)
	}
	for _, t := range w.tensors {
		w.str(t.Name)
		w.u32(uint32(len(t.Ne)))
		for _, d := range t.Ne {
			w.u64(uint64(d))
		}
		w.u32(uint32(t.Type))
		w.u64(t.Offset)
	}
}

// value writes a checked value without its type id.
func (w *Writer) value(v Value) {
	switch v.Type {
	case String:
		w.str(v.str)
	case TypeArray:
		w.array(v.arr)
	default:
		w.out(appendScalar(make([]byte, 0, 8), v.Type, v.bits, v.Type.size()))
	}
}

// array writes a checked array: element type, length, elements.
func (w *Writer) array(a *Array) {
	w.u32(uint32(a.ElemType))
	w.u64(uint64(a.Len))
	switch a.ElemType {
	case String:
		for _, s := range a.strs {
			w.str(s)
		}
	case TypeArray:
		for _, e := range a.arrs {
			w.array(e)
		}
	default:
		w.out(a.raw)
	}
}

// Tensors returns the tensor infos as written: the names, shapes and types given to NewWriter with their computed
// Offset (bytes from the start of the data section) and Size (bytes). The slice is a copy.
func (w *Writer) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(w.tensors))
	for i, t := range w.tensors {
		t.Ne = slices.Clone(t.Ne)
		out[i] = t
	}
	return out
}

// Alignment returns the data alignment in bytes.
func (w *Writer) Alignment() uint64 { return w.alignment }

// DataOffset returns the file offset in bytes of the data section: the header's length padded to the alignment
// (unpadded when there are no tensors), as [File.DataOffset] will read it.
func (w *Writer) DataOffset() uint64 { return w.dataOffset }

// Size returns the length in bytes of the complete file.
func (w *Writer) Size() uint64 { return w.fileSize }

// Write appends tensor data: the tensors' bytes concatenated in order, without padding, which the Writer inserts
// after each tensor's last byte. p may end anywhere and span several tensors. Supplying more bytes than the
// tensors hold fails with [ErrDataSize] and writes nothing of p. It returns len(p), or on an error of the
// underlying writer the number of bytes of p accepted before it and that error, wrapped.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	remain := w.total - w.pos
	if uint64(len(p)) > remain {
		return 0, fmt.Errorf("gguf: %w: %d bytes of tensor data written, only %d remain", ErrDataSize, len(p), remain)
	}
	written := 0
	for len(p) > 0 {
		t := &w.tensors[w.cur]
		n := int(min(uint64(len(p)), t.Size-w.done))
		before := w.written
		w.out(p[:n])
		written += int(w.written - before)
		if w.err == nil {
			p = p[n:]
			w.done += uint64(n)
			w.pos += uint64(n)
			if w.done == t.Size {
				w.pad(pad(t.Size, w.alignment) - t.Size)
				w.cur++
				w.done = 0
			}
		}
		if w.err != nil {
			return written, fmt.Errorf("gguf: writing tensor %q: %w", t.Name, w.err)
		}
	}
	return written, nil
}

// WriteTensor writes the complete data of the next tensor, which must not have been started by Write. data must
// hold exactly that tensor's Size bytes; otherwise the error wraps [ErrDataSize] and nothing is written.
func (w *Writer) WriteTensor(data []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.cur == len(w.tensors) {
		return fmt.Errorf("gguf: %w: %d bytes of data after the last of %d tensors", ErrDataSize, len(data), len(w.tensors))
	}
	t := &w.tensors[w.cur]
	switch {
	case w.done != 0:
		return fmt.Errorf("gguf: tensor %q: %w: WriteTensor after %d of its %d bytes were written", t.Name, ErrDataSize, w.done, t.Size)
	case uint64(len(data)) != t.Size:
		return fmt.Errorf("gguf: tensor %q: %w: %d bytes given, its %s %v data is %d bytes", t.Name, ErrDataSize, len(data), t.Type, t.Ne, t.Size)
	}
	_, err := w.Write(data)
	return err
}

// usable reports why the Writer cannot take more calls, if it cannot.
func (w *Writer) usable() error {
	switch {
	case w.closed:
		return fmt.Errorf("gguf: %w", ErrClosed)
	case w.err != nil:
		return fmt.Errorf("gguf: an earlier write failed: %w", w.err)
	}
	return nil
}

// Close checks that every tensor's data was written in full and flushes the buffered output. It does not close the
// underlying io.Writer. A missing byte gives an error wrapping [ErrDataSize] naming the first incomplete tensor (the
// output then holds a truncated file); calling Close again returns an error wrapping [ErrClosed].
func (w *Writer) Close() error {
	if err := w.usable(); err != nil {
		return err
	}
	w.closed = true
	if w.cur < len(w.tensors) {
		t := &w.tensors[w.cur]
		flushErr := w.bw.Flush()
		err := fmt.Errorf("gguf: tensor %q: %w: %d of its %d bytes written (tensor %d of %d)", t.Name, ErrDataSize, w.done, t.Size, w.cur+1, len(w.tensors))
		if flushErr != nil {
			return errors.Join(err, fmt.Errorf("gguf: flushing: %w", flushErr))
		}
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("gguf: flushing: %w", err)
	}
	if w.written != w.fileSize {
		return fmt.Errorf("gguf: internal error: wrote %d bytes, the layout has %d", w.written, w.fileSize)
	}
	return nil
}
