// Package inspect summarises a parsed GGUF file for people and programs (metadata, tensors, totals per type, bits
// per weight, parameter count); it backs `bankml inspect FILE [--json]`.
//
// # Design record
//
// What it does. [Summarize] turns a *gguf.File into a [Report], a plain value with JSON tags: the metadata, each
// tensor's name, type, shape, offset and bytes, and the totals; [Report.WriteText] prints it as aligned tables.
// Nothing here reads tensor data: a report is a function of the header alone (and the file size).
//
// What it follows. The quantities llama.cpp reports for a model: the parameter count is the sum over all tensors of
// their element counts (llama_model_n_params), the size is the sum of their byte sizes (llama_model_size), and bits
// per weight is 8 × bytes / parameters, overall and per ggml type. Type names are ggml's ("f32", "q8_0", "q4_K").
// Layers are counted as the distinct N of tensor names "blk.N.…", llama.cpp's naming.
//
// Choices. An array longer than [ArrayHead] elements is shown as its element type, its length and its first
// ArrayHead values; arrays nested in arrays show only their type and length. In JSON, f32 values are printed in
// their shortest float32 form (1e-05, not 9.999999747378752e-06), integers exactly (a u64 above 2^53 too), and
// NaN and infinities, which JSON cannot hold, as the strings "NaN", "+Inf", "-Inf". Strings are printed whole in
// JSON (a chat template is one value) and cut to [TextStringMax] bytes in text; GGUF strings need not be UTF-8,
// and JSON replaces invalid bytes with U+FFFD while text escapes them (Go %q).
//
// Determinism. A report is a pure function of the file: metadata and tensors in file order, type totals in type-id
// order.
package inspect

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/bankml/bankml/gguf"
)

// ArrayHead is the number of leading values shown of a metadata array; shorter arrays are shown whole.
const ArrayHead = 8

// TextStringMax is the number of bytes of a string value shown in the text form before it is cut.
const TextStringMax = 72

// Report is the summary of a GGUF file. Its JSON form is the object of `bankml inspect --json`.
type Report struct {
	File          string      `json:"file"`            // the path given
	FileSize      uint64      `json:"file_size"`       // bytes
	Version       uint32      `json:"version"`         // GGUF version, 2 or 3
	Alignment     uint64      `json:"alignment"`       // the data alignment in bytes
	DataOffset    uint64      `json:"data_offset"`     // where the tensor data section starts, bytes from the file start
	Architecture  string      `json:"architecture"`    // general.architecture, or ""
	Name          string      `json:"name,omitempty"`  // general.name, or ""
	KVCount       int         `json:"kv_count"`        // metadata keys
	TensorCount   int         `json:"tensor_count"`    // tensors
	Layers        int         `json:"layers"`          // distinct N in tensor names "blk.N.*"
	Parameters    int64       `json:"parameters"`      // the sum of the tensors' element counts
	TensorBytes   uint64      `json:"tensor_bytes"`    // the sum of the tensors' byte sizes (without alignment padding)
	BitsPerWeight float64     `json:"bits_per_weight"` // 8 × TensorBytes / Parameters (0 for a file without tensors)
	Types         []TypeTotal `json:"types"`           // totals per tensor type, in type-id order
	Metadata      []Meta      `json:"metadata"`        // the key/value pairs, in file order
	Tensors       []Tensor    `json:"tensors"`         // the tensors, in file order
}

// TypeTotal is the total of the tensors of one ggml type.
type TypeTotal struct {
	Type          string  `json:"type"`            // ggml's name: "f32", "q8_0", ...
	ID            uint32  `json:"id"`              // the ggml type id
	Tensors       int     `json:"tensors"`         // how many tensors have this type
	Parameters    int64   `json:"parameters"`      // their elements
	Bytes         uint64  `json:"bytes"`           // their bytes
	BitsPerWeight float64 `json:"bits_per_weight"` // 8 × Bytes / Parameters
}

// Tensor describes one tensor.
type Tensor struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`        // ggml's type name
	Shape      []int64 `json:"shape"`       // the dimensions as stored, row length first (ggml's ne)
	Elements   int64   `json:"elements"`    // the product of Shape
	Offset     uint64  `json:"offset"`      // as stored: bytes from the start of the data section
	FileOffset uint64  `json:"file_offset"` // bytes from the start of the file
	Bytes      uint64  `json:"bytes"`       // the size of its data
}

// Meta is one metadata key/value pair, with a long array summarised.
type Meta struct {
	Key       string `json:"key"`
	Type      string `json:"type"`                // "u32", "str", ... or "arr[str]", "arr[arr]" for arrays
	Len       *int   `json:"len,omitempty"`       // arrays only: the number of elements
	Value     any    `json:"value"`               // a scalar; for an array, the list of its first values
	Truncated bool   `json:"truncated,omitempty"` // the array has more values than Value lists
}

// Summarize builds the report of f; path is recorded as the file's name. It never fails: every quantity it needs
// was validated when f was parsed.
func Summarize(f *gguf.File, path string) *Report {
	r := &Report{
		File: path, FileSize: f.FileSize, Version: f.Version, Alignment: f.Alignment, DataOffset: f.DataOffset,
		Architecture: f.Architecture(), KVCount: len(f.KVs), TensorCount: len(f.Tensors),
		Metadata: make([]Meta, 0, len(f.KVs)), Tensors: make([]Tensor, 0, len(f.Tensors)), Types: []TypeTotal{},
	}
	r.Name, _ = f.GetString("general.name")
	for _, kv := range f.KVs {
		r.Metadata = append(r.Metadata, summarizeKV(kv))
	}
	byType := map[gguf.GGMLType]*TypeTotal{}
	layers := map[string]bool{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		// No overflow: each tensor lies inside the file and no type packs 8 elements into a byte, so the sums fit
		// an int64 for any file under 2^60 bytes.
		n := t.NElements()
		r.Tensors = append(r.Tensors, Tensor{
			Name: t.Name, Type: t.Type.String(), Shape: append([]int64{}, t.Ne...), Elements: n,
			Offset: t.Offset, FileOffset: f.DataOffset + t.Offset, Bytes: t.Size,
		})
		r.Parameters += n
		r.TensorBytes += t.Size
		tt := byType[t.Type]
		if tt == nil {
			tt = &TypeTotal{Type: t.Type.String(), ID: uint32(t.Type)}
			byType[t.Type] = tt
		}
		tt.Tensors++
		tt.Parameters += n
		tt.Bytes += t.Size
		if l, ok := layerOf(t.Name); ok {
			layers[l] = true
		}
	}
	r.Layers = len(layers)
	r.BitsPerWeight = bpw(r.TensorBytes, r.Parameters)
	for _, tt := range byType {
		tt.BitsPerWeight = bpw(tt.Bytes, tt.Parameters)
		r.Types = append(r.Types, *tt)
	}
	sort.Slice(r.Types, func(i, j int) bool { return r.Types[i].ID < r.Types[j].ID })
	return r
}

// layerOf returns N of a tensor name "blk.N.…".
func layerOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return "", false
	}
	n, _, ok := strings.Cut(rest, ".")
	if !ok || n == "" {
		return "", false
	}
	if _, err := strconv.ParseUint(n, 10, 32); err != nil {
		return "", false
	}
	return n, true
}

// bpw returns 8*bytes/params, or 0 when params is 0.
func bpw(bytes uint64, params int64) float64 {
	if params <= 0 {
		return 0
	}
	return 8 * float64(bytes) / float64(params)
}

// summarizeKV renders one metadata pair.
func summarizeKV(kv gguf.KV) Meta {
	m := Meta{Key: kv.Key, Type: kv.Value.Type.String()}
	a, ok := kv.Value.Array()
	if !ok {
		m.Value = scalarValue(kv.Value)
		return m
	}
	m.Type = arrayType(a)
	n := a.Len
	m.Len = &n
	vals := a.Values()
	if len(vals) > ArrayHead {
		vals = vals[:ArrayHead]
		m.Truncated = true
	}
	head := make([]any, len(vals))
	for i, v := range vals {
		if sub, ok := v.Array(); ok {
			head[i] = map[string]any{"type": arrayType(sub), "len": sub.Len}
		} else {
			head[i] = scalarValue(v)
		}
	}
	m.Value = head
	return m
}

// arrayType names an array's type, e.g. "arr[str]".
func arrayType(a *gguf.Array) string { return "arr[" + a.ElemType.String() + "]" }

// scalarValue returns v as a JSON-ready value: json.Number for numbers, a string for non-finite floats and
// strings, a bool for bools.
func scalarValue(v gguf.Value) any {
	switch v.Type {
	case gguf.Bool:
		b, _ := v.Bool()
		return b
	case gguf.String:
		s, _ := v.String()
		return s
	case gguf.Float32, gguf.Float64:
		x, _ := v.Float64()
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "+Inf"
		case math.IsInf(x, -1):
			return "-Inf"
		}
		bitSize := 64
		if v.Type == gguf.Float32 {
			bitSize = 32
		}
		return json.Number(strconv.FormatFloat(x, 'g', -1, bitSize))
	}
	if u, ok := v.Uint64(); ok {
		return json.Number(strconv.FormatUint(u, 10))
	}
	if i, ok := v.Int64(); ok {
		return json.Number(strconv.FormatInt(i, 10))
	}
	return nil // no other value type exists in a parsed file
}
