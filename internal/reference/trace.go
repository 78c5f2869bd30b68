package reference

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Tensor is one intermediate result of the reference's graph, copied out by
// Trace: its ggml name (e.g. "attn_norm-0", "Qcur-0", "kqv_out-0"), op and
// type ids, shape, and its values widened to float32 (F32 and F16 tensors
// only; Data is nil for other types).
type Tensor struct {
	Name string
	Op   int32
	Type int32
	Ne   [4]int64
	Data []float32
}

// Offsets in struct ggml_tensor (ggml.h of v0.5.0: GGML_MAX_DIMS 4,
// GGML_MAX_OP_PARAMS 64, GGML_MAX_SRC 10, GGML_MAX_NAME 64).
const (
	tensorType = 0
	tensorNe   = 16
	tensorNb   = 48
	tensorOp   = 80
	tensorData = 248
	tensorName = 256
)

// tracer receives the scheduler's eval callbacks; one per process, because
// purego callbacks cannot be freed.
type tracer struct {
	mu      sync.Mutex // one Trace at a time
	cb      uintptr
	tensors []Tensor
	keep    func(name string) bool // nil: every node
}

// cName returns the NUL-terminated string at the start of b.
func cName(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

var (
	traceOnce sync.Once
	theTracer tracer
)

func (tr *tracer) callback(t uintptr, ask uintptr, _ uintptr) uintptr {
	p := cPointer(t)
	raw := unsafe.Slice((*byte)(p), tensorName+64)
	if ask&0xff != 0 {
		if tr.keep == nil || tr.keep(cName(raw[tensorName:tensorName+64])) {
			return 1
		}
		return 0
	}
	var x Tensor
	x.Type = int32(binary.LittleEndian.Uint32(raw[tensorType:]))
	x.Op = int32(binary.LittleEndian.Uint32(raw[tensorOp:]))
	var nb [4]uint64
	for i := range 4 {
		x.Ne[i] = int64(binary.LittleEndian.Uint64(raw[tensorNe+8*i:]))
		nb[i] = binary.LittleEndian.Uint64(raw[tensorNb+8*i:])
	}
	x.Name = cName(raw[tensorName : tensorName+64])
	data := uintptr(binary.LittleEndian.Uint64(raw[tensorData:]))
	base := cPointer(data)
	if data != 0 && (x.Type == 0 || x.Type == 1) {
		n := x.Ne[0] * x.Ne[1] * x.Ne[2] * x.Ne[3]
		x.Data = make([]float32, 0, n)
		for i3 := range x.Ne[3] {
			for i2 := range x.Ne[2] {
				for i1 := range x.Ne[1] {
					for i0 := range x.Ne[0] {
						off := uintptr(uint64(i0)*nb[0] + uint64(i1)*nb[1] + uint64(i2)*nb[2] + uint64(i3)*nb[3])
						ep := unsafe.Add(base, off)
						if x.Type == 0 {
							x.Data = append(x.Data, *(*float32)(ep))
						} else {
							x.Data = append(x.Data, halfToFloat(*(*uint16)(ep)))
						}
					}
				}
			}
		}
	}
	tr.tensors = append(tr.tensors, x)
	return 1
}

// halfToFloat widens an IEEE binary16 value (exactly).
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0: // zero or subnormal: mant · 2^-24
		v := float32(mant) * 0x1p-24
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// Trace decodes prompt in a fresh context (the settings of PromptLogits) with
// an eval callback that observes every graph node, and returns the nodes'
// values in evaluation order. Observing every node makes the scheduler
// compute the graph node by node, which disables the CPU backend's op fusion
// (rms_norm+mul): a debugging aid, not an oracle for fused paths.
func (m *Model) Trace(prompt []int32, threads int) ([]Tensor, error) {
	return m.TraceOutputs(prompt, threads, false, nil)
}

// TraceOutputs is Trace with two choices: all marks every prompt token as an
// output (llama_batch.logits all 1, so the last layer, result_norm and
// result_output keep every row, as a perplexity run asks), and keep, when
// not nil, limits the observed nodes to the names it accepts (the scheduler
// then splits the graph only at those nodes, and the CPU backend's op fusion
// stays on elsewhere).
func (m *Model) TraceOutputs(prompt []int32, threads int, all bool, keep func(name string) bool) ([]Tensor, error) {
	traceOnce.Do(func() { theTracer.cb = purego.NewCallback(theTracer.callback) })
	tr := &theTracer
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	tr.tensors, tr.keep = nil, keep
	defer func() { tr.keep = nil }()
	ctx, err := m.newContextWith(prompt, len(prompt), threads, func(p *llamaContextParams) {
		p.CbEval = tr.cb
	})
	if err != nil {
		return nil, err
	}
	defer m.lib.llamaFree(ctx)
	if err := m.decodeBatch(ctx, prompt, all); err != nil {
		return nil, err
	}
	out := tr.tensors
	tr.tensors = nil
	return out, nil
}

// cPointer turns an address of C memory (owned by ggml, not the Go heap) into
// an unsafe.Pointer without go vet's uintptr-conversion warning.
func cPointer(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}
