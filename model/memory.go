package model

import (
	"fmt"
	"math/bits"
	"reflect"
	"strings"
	"unsafe"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// MemoryBound reports the memory a process may use, in bytes (0: unknown, no check), and the cgroup limit
// file it comes from ("" when it is the machine's RAM). ProcessMemory is this process's; tests pass a fake.
type MemoryBound func() (n uint64, file string)

// ProcessMemory is the memory this process may use: the machine's RAM or, when lower, its cgroup's memory
// limit (a container's), with the limit's file; 0 when neither is known (off linux).
func ProcessMemory() (n uint64, file string) { return memoryBound() }

// KVCacheBytes is the memory of slots full KV caches of nCtx tokens each at cache types t: each context's
// nCtx padded to 256 cells, as a Context pads it, times K's and V's row bytes over every layer (an encoder's
// cache is f16 whatever t says, as NewContextTypes makes it). Zero types are f16. The product saturates at
// 2^64-1 instead of wrapping. It is the one formula of the memory checks (CheckMemory) and of a caller
// budgeting a model from its header (FileHparams), such as storeserve's --max-memory.
func (hp *Hparams) KVCacheBytes(nCtx, slots int, t CacheTypes) uint64 {
	if nCtx <= 0 || slots <= 0 {
		return 0
	}
	nCells := (uint64(nCtx) + kvPad - 1) / kvPad * kvPad
	return mulSat(uint64(slots), hp.kvBytes(nCells, t))
}

// kvBytes is the size of K and V of types t for cells cells over all layers (saturating).
func (hp *Hparams) kvBytes(cells uint64, t CacheTypes) uint64 {
	t = t.norm()
	if !hp.Causal {
		t = CacheTypes{}.norm()
	}
	nkv := hp.NHeadKV * hp.HeadDim
	row := uint64(rowBytes(t.K, nkv) + rowBytes(t.V, nkv))
	return mulSat(mulSat(uint64(hp.NLayer), cells), row)
}

// mulSat is a*b, or 2^64-1 when that overflows.
func mulSat(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

// WeightBytes is the memory the model's weights hold while it runs, in bytes: what Load keeps resident,
// counted from the Model itself.
//   - Every matrix it reads from the file (token_embd, the projections not packed, bert's position and token
//     type embeddings) counts whole: its pages of a mapped file (gguf.Open) are faulted in by use and stay
//     resident, or the file was read into memory (gguf.Parse; gguf.Open off linux). token_embd counts whole
//     though get_rows only faults in the rows of the tokens seen.
//   - A projection Load packs for the SIMD levels (Q1_0, Q2_0, TQ2_0; quant.Matrix.Repack) counts as its
//     packed copy, its rows rounded up to whole groups of 16 (also before LoadBackground has made it); its
//     mapped pages, released from the resident set once packed (releasePages), are not counted, unless the
//     file was read into memory, where they stay.
//   - Vectors (norms, biases, scales) count as their float32 copies.
//
// A tied output shares token_embd's bytes (counted once) and, packed, adds its copy. Not counted: the GGUF
// header (metadata, the tokenizer's vocabulary), the matmul buffers of a Runner and the Go runtime.
func (m *Model) WeightBytes() uint64 {
	return m.weightBytes(sharedFileMaps())
}

// weightBytes is WeightBytes with maps the read-only shared file mappings of the process (sharedFileMaps).
func (m *Model) weightBytes(maps [][2]uintptr) uint64 {
	var total uint64
	seen := map[*byte]bool{}
	data := func(b []byte) {
		if p := unsafe.SliceData(b); len(b) > 0 && !seen[p] {
			seen[p] = true
			total += uint64(len(b))
		}
	}
	for _, q := range []*quant.Matrix{m.TokEmbd, m.TokTypes, m.PosEmbd} {
		if q != nil {
			data(q.Data)
		}
	}
	for _, l := range m.Linears() {
		for i := range l.Planes {
			p := &l.Planes[i]
			if m.Level == quant.LevelGeneric || !quant.Packable(p.Type) {
				data(p.Data)
				continue
			}
			total += uint64((p.Rows+15)/16*16) * uint64(rowBytes(p.Type, p.Cols))
			if !inMaps(p.Data, maps) {
				data(p.Data)
			}
		}
	}
	vecs := func(v reflect.Value) {
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("gguf") == "" {
				continue
			}
			if x, ok := v.Field(i).Interface().([]float32); ok {
				total += 4 * uint64(len(x))
			}
		}
	}
	vecs(reflect.ValueOf(m).Elem())
	for i := range m.Layers {
		vecs(reflect.ValueOf(&m.Layers[i]).Elem())
	}
	return total
}

// inMaps reports whether b lies inside one of maps (address ranges).
func inMaps(b []byte, maps [][2]uintptr) bool {
	if len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end := start + uintptr(len(b))
	for _, r := range maps {
		if r[0] <= start && end <= r[1] {
			return true
		}
	}
	return false
}

// CheckMemory refuses to run slots contexts of nCtx tokens each (a Context's size: NewContext's nCtx) with
// KV cache types t when the model's weights (WeightBytes) and the slots' full KV caches (KVCacheBytes) do
// not fit the memory bound gives (nil: ProcessMemory, the machine's RAM or its cgroup's limit), checked
// before anything is allocated. The caches grow with use, but a slot may fill its own: the check is that
// they all can. The error names the bytes of each part, the bound (and the cgroup limit's file), and the
// flags that change them: -c (the context), -np (the slots, when more than one), -ctk/-ctv (the cache
// types, when smaller ones exist; an encoder's cache is f16). It also refuses a size outside [1, 2^30] or slots below 1.
// The engine calls it once for all its slots; Model.NewContext calls it for its one context.
func (m *Model) CheckMemory(nCtx, slots int, t CacheTypes, bound MemoryBound) error {
	if err := checkNCtx(nCtx); err != nil {
		return err
	}
	if slots < 1 {
		return fmt.Errorf("model: %d slots: want at least 1", slots)
	}
	if bound == nil {
		bound = ProcessMemory
	}
	avail, limitFile := bound()
	if avail == 0 {
		return nil
	}
	weights := m.WeightBytes()
	kv := m.HP.KVCacheBytes(nCtx, slots, t)
	need := weights + kv
	if need < weights { // saturate
		need = ^uint64(0)
	}
	if need <= avail {
		return nil
	}
	needS, availS := size(need), size(avail)
	if needS == availS { // too close to tell apart rounded
		needS, availS = fmt.Sprintf("%d bytes", need), fmt.Sprintf("%d bytes", avail)
	}
	where := fmt.Sprintf("this machine's %s of RAM", availS)
	if limitFile != "" {
		where = fmt.Sprintf("the cgroup memory limit of %s (%s)", availS, limitFile)
	}
	t = t.norm()
	if !m.HP.Causal {
		t = CacheTypes{}.norm()
	}
	caches := fmt.Sprintf("a KV cache of %d tokens", nCtx)
	if slots > 1 {
		caches = fmt.Sprintf("%d slots' KV caches of %d tokens each", slots, nCtx)
	}
	msg := fmt.Sprintf("model: the weights (%s) and %s (-ctk %s -ctv %s: %s) need %s, more than %s",
		size(weights), caches, t.K, t.V, size(kv), needS, where)
	if weights > avail {
		return fmt.Errorf("%s: the weights alone do not fit", msg)
	}
	flags := []string{"a smaller context (-c)"}
	if slots > 1 {
		flags = append(flags, "fewer slots (-np)")
	}
	switch {
	case m.HP.Causal && (t.K == gguf.F16 || t.V == gguf.F16):
		flags = append(flags, "smaller cache types (-ctk/-ctv q8_0 or q4_0)")
	case m.HP.Causal && (t.K != gguf.Q4_0 || t.V != gguf.Q4_0):
		flags = append(flags, "smaller cache types (-ctk/-ctv q4_0)")
	}
	return fmt.Errorf("%s: give %s", msg, strings.Join(flags, ", "))
}

// size is n bytes in words: GiB with two decimals from 1 GiB, MiB with one from 1 MiB, else bytes.
func size(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
