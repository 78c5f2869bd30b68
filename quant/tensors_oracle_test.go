package quant_test

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/quant"
)

// The tensor oracle of issue 4: every tensor of the shared models and of
// synthetic models of every type dequantizes to the reference's f32 bits
// (compared bit by bit; bankml's output is also hashed, sha256 per tensor),
// activation rows quantize to the reference's bytes (Q8_0, Q8_1, Q8_K), and
// three rows per weight matrix dot four activation rows bit-equal to the
// haswell ggml_vec_dot_*. BANKML_ORACLE_FULL=1 adds the bonsai-8b shapes for every
// type and every tensor of the bonsai-1.7b shapes.

// The test lives outside package quant (internal/synth imports quant), so it
// names the kernels through quant's exported API.

// actFormat is an activation block format and quant's quantizer for it.
type actFormat struct {
	block, size int
	quantize    func(x []float32, dst []byte)
}

var (
	actQ8_0 = actFormat{quant.QK8_0, quant.BlockQ8_0Size, quant.QuantizeRowQ8_0}
	actQ8_1 = actFormat{quant.QK8_1, quant.BlockQ8_1Size, quant.QuantizeRowQ8_1}
	actQ8_K = actFormat{quant.QK_K, quant.BlockQ8_KSize, quant.QuantizeRowQ8_K}
)

// blockKernel is a block type's activation format and vec_dot in quant.
type blockKernel struct {
	act actFormat
	dot func(w, a []byte, nb int) float32
}

// blockKernels: the activation format and dot product ggml-cpu's type traits
// give each block type (vec_dot_type, vec_dot).
var blockKernels = map[gguf.GGMLType]blockKernel{
	gguf.Q8_0: {actQ8_0, quant.VecDotQ8_0Q8_0}, gguf.Q4_0: {actQ8_0, quant.VecDotQ4_0Q8_0},
	gguf.Q1_0: {actQ8_0, quant.VecDotQ1_0Q8_0}, gguf.Q2_0: {actQ8_0, quant.VecDotQ2_0Q8_0},
	gguf.Q4_1: {actQ8_1, quant.VecDotQ4_1Q8_1}, gguf.Q5_0: {actQ8_0, quant.VecDotQ5_0Q8_0}, gguf.Q5_1: {actQ8_1, quant.VecDotQ5_1Q8_1},
	gguf.TQ1_0: {actQ8_K, quant.VecDotTQ1_0Q8_K}, gguf.TQ2_0: {actQ8_K, quant.VecDotTQ2_0Q8_K},
	gguf.Q2_K: {actQ8_K, quant.VecDotQ2_KQ8_K}, gguf.Q3_K: {actQ8_K, quant.VecDotQ3_KQ8_K},
	gguf.Q4_K: {actQ8_K, quant.VecDotQ4_KQ8_K}, gguf.Q5_K: {actQ8_K, quant.VecDotQ5_KQ8_K}, gguf.Q6_K: {actQ8_K, quant.VecDotQ6_KQ8_K},
}

// genericDots pairs quant's model of each exported ggml_vec_dot_*_generic
// (the plain-C float order) with the reference symbol.
var genericDots = map[gguf.GGMLType]struct {
	ours func(w, a []byte, nb int) float32
	ref  func(k *reference.Kernels) func(n int, x, y []byte) float32
}{
	gguf.Q8_0:  {quant.VecDotQ8_0Q8_0Generic, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ8_0Q8_0Generic }},
	gguf.Q4_0:  {quant.VecDotQ4_0Q8_0Generic, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ4_0Q8_0Generic }},
	gguf.Q1_0:  {quant.VecDotQ1_0Q8_0Generic, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ1_0Q8_0Generic }},
	gguf.Q4_1:  {quant.VecDotQ4_1Q8_1Generic, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ4_1Q8_1Generic }},
	gguf.Q5_0:  {quant.VecDotQ5_0Q8_0Generic, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ5_0Q8_0Generic }},
	gguf.Q5_1:  {quant.VecDotQ5_1Q8_1Generic, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ5_1Q8_1Generic }},
	gguf.TQ1_0: {quant.VecDotTQ1_0Q8_KGeneric, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotTQ1_0Q8_KGeneric }},
	gguf.TQ2_0: {quant.VecDotTQ2_0Q8_KGeneric, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotTQ2_0Q8_KGeneric }},
	gguf.Q2_K:  {quant.VecDotQ2_KQ8_KGeneric, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ2_KQ8_KGeneric }},
	gguf.Q3_K:  {quant.VecDotQ3_KQ8_KGeneric, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ3_KQ8_KGeneric }},
	gguf.Q4_K:  {quant.VecDotQ4_KQ8_KGeneric, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ4_KQ8_KGeneric }},
	gguf.Q5_K:  {quant.VecDotQ5_KQ8_KGeneric, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ5_KQ8_KGeneric }},
	gguf.Q6_K:  {quant.VecDotQ6_KQ8_KGeneric, func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ6_KQ8_KGeneric }},
}

func bitsEq(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// randRow draws values of mixed magnitudes with zeros, negative zeros and
// small integers (as quant's own oracle tests do).
func randRow(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(10) {
		case 0:
			x[i] = 0
		case 1:
			x[i] = float32(math.Copysign(0, -1))
		case 2:
			x[i] = float32(r.IntN(255) - 127)
		default:
			x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(16)-8)))
		}
	}
	return x
}

// envOracleFull selects the exhaustive (slow) variant of the tensor oracle.
const envOracleFull = "BANKML_ORACLE_FULL"

// tensorOracle holds the reference's kernels per type, bound once.
type tensorOracle struct {
	k      *reference.Kernels
	fp16   func(x, y unsafe.Pointer, n int64) // ggml_fp16_to_fp32_row
	real   []float32                          // real activations (stories260K forward pass), finite
	acts   map[int][4][]float32               // activation rows per row length
	actsQ  map[actKey][2][4][]byte            // quantized activations per (length, type): ours, reference
	actChk int                                // activation quantizations checked (all equal, else fatal)
}

type actKey struct {
	n int
	t gguf.GGMLType
}

func newTensorOracle(t *testing.T) *tensorOracle {
	t.Helper()
	k, err := reference.LoadKernels()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	for _, bound := range []func() error{k.LowBitErr, k.KQuantsErr, k.LegacyErr, k.K456Err, k.GenericQ8Err} {
		if err := bound(); err != nil {
			t.Fatal(err)
		}
	}
	o := &tensorOracle{k: k, acts: map[int][4][]float32{}, actsQ: map[actKey][2][4][]byte{}}
	if err := k.Bind(&o.fp16, "ggml_fp16_to_fp32_row"); err != nil {
		t.Fatal(err)
	}
	return o
}

// refDequant is the reference's to_float for type typ over len(y) values.
func (o *tensorOracle) refDequant(typ gguf.GGMLType, x []byte, y []float32) {
	k := o.k
	switch typ {
	case gguf.F32:
		copy(y, unsafe.Slice((*float32)(unsafe.Pointer(&x[0])), len(y))) // ggml's get_rows copies f32 rows
	case gguf.F16:
		o.fp16(unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0]), int64(len(y)))
		runtime.KeepAlive(x)
		runtime.KeepAlive(y)
	case gguf.BF16:
		k.BF16ToFP32Row(unsafe.Slice((*uint16)(unsafe.Pointer(&x[0])), len(y)), y)
	case gguf.Q8_0:
		k.DequantizeRowQ8_0(x, y)
	case gguf.Q4_0:
		k.DequantizeRowQ4_0(x, y)
	case gguf.Q1_0:
		k.DequantizeRowQ1_0(x, y)
	case gguf.Q2_0:
		k.DequantizeRowQ2_0(x, y)
	case gguf.Q4_1:
		k.DequantizeRowQ4_1(x, y)
	case gguf.Q5_0:
		k.DequantizeRowQ5_0(x, y)
	case gguf.Q5_1:
		k.DequantizeRowQ5_1(x, y)
	case gguf.TQ1_0:
		k.DequantizeRowTQ1_0(x, y)
	case gguf.TQ2_0:
		k.DequantizeRowTQ2_0(x, y)
	case gguf.Q2_K:
		k.DequantizeRowQ2_K(x, y)
	case gguf.Q3_K:
		k.DequantizeRowQ3_K(x, y)
	case gguf.Q4_K:
		k.DequantizeRowQ4_K(x, y)
	case gguf.Q5_K:
		k.DequantizeRowQ5_K(x, y)
	case gguf.Q6_K:
		k.DequantizeRowQ6_K(x, y)
	default:
		panic(fmt.Sprintf("no reference dequantizer for %s", typ))
	}
}

// refDot is the haswell ggml_vec_dot_* of a block type against its
// activation format, over n values.
func (o *tensorOracle) refDot(typ gguf.GGMLType) func(n int, x, y []byte) float32 {
	k := o.k
	return map[gguf.GGMLType]func(n int, x, y []byte) float32{
		gguf.Q8_0: k.VecDotQ8_0Q8_0, gguf.Q4_0: k.VecDotQ4_0Q8_0,
		gguf.Q1_0: k.VecDotQ1_0Q8_0, gguf.Q2_0: k.VecDotQ2_0Q8_0,
		gguf.Q4_1: k.VecDotQ4_1Q8_1, gguf.Q5_0: k.VecDotQ5_0Q8_0, gguf.Q5_1: k.VecDotQ5_1Q8_1,
		gguf.TQ1_0: k.VecDotTQ1_0Q8_K, gguf.TQ2_0: k.VecDotTQ2_0Q8_K,
		gguf.Q2_K: k.VecDotQ2_KQ8_K, gguf.Q3_K: k.VecDotQ3_KQ8_K,
		gguf.Q4_K: k.VecDotQ4_KQ8_K, gguf.Q5_K: k.VecDotQ5_KQ8_K, gguf.Q6_K: k.VecDotQ6_KQ8_K,
	}[typ]
}

// refActQuant is the haswell from_float of an activation block format.
func (o *tensorOracle) refActQuant(a actFormat) func(x []float32, y []byte) {
	switch a.block {
	case quant.QK_K:
		return o.k.QuantizeRowQ8_K
	}
	if a.size == quant.BlockQ8_1Size {
		return o.k.QuantizeRowQ8_1
	}
	return o.k.QuantizeRowQ8_0
}

// envTraceOut asks TestStories260KTrace, run in a child process, to write
// the real activations there.
const envTraceOut = "BANKML_ORACLE_TRACE_OUT"

// loadRealActivations takes the attn_norm, ffn_norm and ffn_swiglu values of
// every layer of stories260K's forward pass in the reference
// (reference.Model.Trace). The trace runs in a child process of the test
// binary: reference.Load refuses a process in which the kernel oracles have
// already mapped the x64 CPU variant (the Q2_0 x64 oracle does).
func (o *tensorOracle) loadRealActivations(t *testing.T) {
	t.Helper()
	testdata.Model(t, "stories260K.gguf")
	out := filepath.Join(t.TempDir(), "acts.f32")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStories260KTrace$", "-test.count=1")
	cmd.Env = append(os.Environ(), envTraceOut+"="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tracing stories260K in a child process: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+4 <= len(b); i += 4 {
		o.real = append(o.real, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	if len(o.real) < 1024 {
		t.Fatalf("stories260K trace: only %d activation values", len(o.real))
	}
}

// TestStories260KTrace is loadRealActivations' child: with envTraceOut set
// it traces stories260K in the reference and writes the finite values of
// every attn_norm-*, ffn_norm-* and ffn_swiglu-* node, little-endian f32;
// without it, it does nothing.
func TestStories260KTrace(t *testing.T) {
	out := os.Getenv(envTraceOut)
	if out == "" {
		t.Skip("helper of TestTensorsMatchReference")
	}
	path := testdata.Model(t, "stories260K.gguf")
	lib, err := reference.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	toks, err := m.Tokenize("Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.", true, false)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := m.Trace(toks, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, x := range ts {
		for _, p := range []string{"attn_norm-", "ffn_norm-", "ffn_swiglu-"} {
			if x.Data != nil && strings.HasPrefix(x.Name, p) {
				for _, v := range x.Data {
					if !math.IsInf(float64(v), 0) && v == v {
						b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
					}
				}
			}
		}
	}
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// realWindow returns n real activation values from offset off, wrapping.
func (o *tensorOracle) realWindow(off, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = o.real[(off+i)%len(o.real)]
	}
	return x
}

// activations returns four activation rows of length n: random, random with
// outliers, and two windows of real activations.
func (o *tensorOracle) activations(n int) [4][]float32 {
	if a, ok := o.acts[n]; ok {
		return a
	}
	r := rand.New(rand.NewPCG(uint64(n), 4))
	out := randRow(r, n)
	for range max(1, n/64) {
		out[r.IntN(n)] = float32(r.NormFloat64() * 1e3)
	}
	a := [4][]float32{randRow(r, n), out, o.realWindow(0, n), o.realWindow(len(o.real)/2+17, n)}
	o.acts[n] = a
	return a
}

// actRows returns the four activation rows of length n in the form typ's
// dot product takes, ours and the reference's from_float; for block types
// the two quantizations must be byte-equal.
func (o *tensorOracle) actRows(t *testing.T, typ gguf.GGMLType, n int) [2][4][]byte {
	key := actKey{n, typ}
	if q, ok := o.actsQ[key]; ok {
		return q
	}
	var q [2][4][]byte
	for i, x := range o.activations(n) {
		switch typ {
		case gguf.F32:
			b := slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*n))
			q[0][i], q[1][i] = b, b
		case gguf.F16:
			h := make([]uint16, n)
			quant.FP32ToFP16Row(x, h)
			for j, v := range x {
				if hr := o.k.FP32ToFP16(v); hr != h[j] {
					t.Fatalf("f16 activation %d of %d: %#04x, reference %#04x", j, n, h[j], hr)
				}
			}
			b := slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*n))
			q[0][i], q[1][i] = b, b
		case gguf.BF16:
			h, hr := make([]uint16, n), make([]uint16, n)
			quant.FP32ToBF16Row(x, h)
			o.k.CPUFP32ToBF16(x, hr)
			if !slices.Equal(h, hr) {
				t.Fatalf("bf16 activation of %d values differs from ggml_cpu_fp32_to_bf16", n)
			}
			q[0][i] = slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*n))
			q[1][i] = slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&hr[0])), 2*n))
		default:
			a := blockKernels[typ].act
			ours, ref := make([]byte, n/a.block*a.size), make([]byte, n/a.block*a.size)
			a.quantize(x, ours)
			o.refActQuant(a)(x, ref)
			if !bytes.Equal(ours, ref) {
				t.Fatalf("%s activation row %d (%d values) quantizes to other bytes than the reference", typ, i, n)
			}
			o.actChk++
			q[0][i], q[1][i] = ours, ref
		}
	}
	o.actsQ[key] = q
	return q
}

// dot computes one weight row's dot product with one activation, ours and
// the reference's.
func (o *tensorOracle) dot(typ gguf.GGMLType, cols int, w, aOurs, aRef []byte) (float32, float32) {
	switch typ {
	case gguf.F32:
		x := unsafe.Slice((*float32)(unsafe.Pointer(&w[0])), cols)
		y := unsafe.Slice((*float32)(unsafe.Pointer(&aOurs[0])), cols)
		return quant.VecDotF32(x, y), o.k.VecDotF32(x, y)
	case gguf.F16, gguf.BF16:
		x := unsafe.Slice((*uint16)(unsafe.Pointer(&w[0])), cols)
		y := unsafe.Slice((*uint16)(unsafe.Pointer(&aOurs[0])), cols)
		yr := unsafe.Slice((*uint16)(unsafe.Pointer(&aRef[0])), cols)
		if typ == gguf.F16 {
			return quant.VecDotF16(x, y), o.k.VecDotF16(x, yr)
		}
		return quant.VecDotBF16(x, y), o.k.VecDotBF16(x, yr)
	}
	bk := blockKernels[typ]
	return bk.dot(w, aOurs, cols/typ.BlockSize()), o.refDot(typ)(cols, w, aRef)
}

// typeStats are one type's counts within one sweep.
type typeStats struct {
	tensors, tensorsEq int
	rows, weights      int64
	dots, dotsEq       int
	genDots, genDotsEq int // against the exported *_generic kernels
	// the same dots at every SIMD level (quant.Level.VecDot, VecDotF16)
	lvlDots, lvlDotsEq [3]int
}

// sweep accumulates the counts of one source (a model folder, a synthetic
// shape) per type.
type sweep struct {
	name  string
	stats map[gguf.GGMLType]*typeStats
}

func newSweep(name string) *sweep { return &sweep{name: name, stats: map[gguf.GGMLType]*typeStats{}} }

func (s *sweep) of(t gguf.GGMLType) *typeStats {
	if s.stats[t] == nil {
		s.stats[t] = &typeStats{}
	}
	return s.stats[t]
}

func (s *sweep) report(t *testing.T, elapsed time.Duration) {
	types := make([]gguf.GGMLType, 0, len(s.stats))
	for ty := range s.stats {
		types = append(types, ty)
	}
	slices.Sort(types)
	t.Logf("%s (%.1f s):", s.name, elapsed.Seconds())
	for _, ty := range types {
		st := s.stats[ty]
		lv := ""
		for _, l := range quant.Levels() {
			if l != quant.LevelGeneric && st.lvlDots[l] > 0 {
				lv += fmt.Sprintf(", %d/%d dots at %s", st.lvlDotsEq[l], st.lvlDots[l], l)
			}
		}
		t.Logf("  %-6s %4d/%d tensors equal, %s rows, %s weights, %d/%d dots, %d/%d _generic dots%s", strings.ToUpper(ty.String()),
			st.tensorsEq, st.tensors, thousands(st.rows), thousands(st.weights), st.dotsEq, st.dots, st.genDotsEq, st.genDots, lv)
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// tensorCheck receives one tensor's bytes in pieces (any split), dequantizes
// them row by row with Matrix.Row and with the reference, compares the f32
// bits of the two outputs directly (which implies equal sha256 digests; it
// also says where they differ) and hashes bankml's output (the tensor's
// sha256 fingerprint; hashing the reference's identical output too doubled
// the bonsai-8b sweep's time), and keeps three rows for the dot products.
type tensorCheck struct {
	o         *tensorOracle
	info      gguf.TensorInfo
	cols      int
	rows      int
	rowBytes  int
	pending   []byte
	row       int
	ours, ref []float32
	sum       hash.Hash // sha256 of bankml's output
	mismatch  string
	dotRows   map[int][]byte
}

func newTensorCheck(o *tensorOracle, ti gguf.TensorInfo) *tensorCheck {
	cols := 1
	if len(ti.Ne) > 0 {
		cols = int(ti.Ne[0])
	}
	rows := int(ti.NElements()) / cols
	c := &tensorCheck{o: o, info: ti, cols: cols, rows: rows,
		rowBytes: cols / ti.Type.BlockSize() * ti.Type.TypeSize(),
		sum:      sha256.New(), dotRows: map[int][]byte{}}
	batch := max(1, min(rows, (1<<18)/cols))
	c.ours, c.ref = make([]float32, batch*cols), make([]float32, batch*cols)
	if len(ti.Ne) >= 2 && rows >= 2 {
		for _, r := range []int{0, rows / 2, rows - 1} {
			c.dotRows[r] = nil
		}
	}
	return c
}

func (c *tensorCheck) Write(b []byte) (int, error) {
	n := len(b)
	if len(c.pending) > 0 {
		take := min(c.rowBytes-len(c.pending), len(b))
		c.pending = append(c.pending, b[:take]...)
		b = b[take:]
		if len(c.pending) == c.rowBytes {
			c.rowsOf(c.pending)
			c.pending = c.pending[:0]
		}
	}
	whole := len(b) / c.rowBytes * c.rowBytes
	if whole > 0 {
		c.rowsOf(b[:whole])
	}
	c.pending = append(c.pending, b[whole:]...)
	return n, nil
}

// rowsOf checks whole rows.
func (c *tensorCheck) rowsOf(data []byte) {
	batch := len(c.ours) / c.cols
	for len(data) > 0 {
		nr := min(batch, len(data)/c.rowBytes)
		chunk := data[:nr*c.rowBytes]
		data = data[nr*c.rowBytes:]
		m := quant.Matrix{Name: c.info.Name, Type: c.info.Type, Rows: nr, Cols: c.cols, Data: chunk}
		ours, ref := c.ours[:nr*c.cols], c.ref[:nr*c.cols]
		ob := unsafe.Slice((*byte)(unsafe.Pointer(&ours[0])), 4*len(ours))
		rb := unsafe.Slice((*byte)(unsafe.Pointer(&ref[0])), 4*len(ref))
		for i := range nr {
			if b, ok := c.dotRows[c.row+i]; ok && b == nil {
				c.dotRows[c.row+i] = slices.Clone(chunk[i*c.rowBytes : (i+1)*c.rowBytes])
			}
		}
		// bankml's rows and their hash on one goroutine, the reference's rows
		// on another: the two cores share the work.
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range nr {
				m.Row(i, ours[i*c.cols:])
			}
			c.sum.Write(ob)
		})
		c.o.refDequant(c.info.Type, chunk, ref)
		wg.Wait()
		if c.mismatch == "" && !bytes.Equal(ob, rb) {
			for j := range ours {
				if !bitsEq(ours[j], ref[j]) {
					c.mismatch = fmt.Sprintf("row %d value %d: %#x, reference %#x", c.row+j/c.cols, j%c.cols,
						math.Float32bits(ours[j]), math.Float32bits(ref[j]))
					break
				}
			}
		}
		c.row += nr
	}
}

// finish compares the hashes and runs the dot products, adding to s.
func (c *tensorCheck) finish(t *testing.T, s *sweep, src string) {
	t.Helper()
	st := s.of(c.info.Type)
	st.tensors++
	st.rows += int64(c.rows)
	st.weights += c.info.NElements()
	switch {
	case c.row != c.rows || len(c.pending) != 0:
		t.Errorf("%s %s: %d of %d rows received", src, c.info.Name, c.row, c.rows)
	case c.mismatch != "":
		t.Errorf("%s %s (%s): dequantized bits differ: %s (sha256 of bankml's output %x)", src, c.info.Name,
			c.info.Type, c.mismatch, c.sum.Sum(nil))
	default:
		st.tensorsEq++
	}
	if len(c.dotRows) == 0 {
		return
	}
	acts := c.o.actRows(t, c.info.Type, c.cols)
	rows := make([]int, 0, len(c.dotRows))
	for r := range c.dotRows {
		rows = append(rows, r)
	}
	slices.Sort(rows)
	for _, r := range rows {
		w := c.dotRows[r]
		for j := range acts[0] {
			got, want := c.o.dot(c.info.Type, c.cols, w, acts[0][j], acts[1][j])
			st.dots++
			if bitsEq(got, want) {
				st.dotsEq++
			} else {
				t.Errorf("%s %s (%s) row %d · activation %d: %g (%#x), reference %g (%#x)", src, c.info.Name,
					c.info.Type, r, j, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			// The same dot on each SIMD level's kernels.
			for _, l := range quant.Levels() {
				if l == quant.LevelGeneric {
					continue
				}
				var got float32
				switch c.info.Type {
				case gguf.F32, gguf.BF16:
					continue // no SIMD kernel: the portable one above
				case gguf.F16:
					x := unsafe.Slice((*uint16)(unsafe.Pointer(&w[0])), c.cols)
					y := unsafe.Slice((*uint16)(unsafe.Pointer(&acts[0][j][0])), c.cols)
					got = l.VecDotF16(x, y)
				default:
					got = l.VecDot(c.info.Type)(w, acts[0][j], c.cols/c.info.Type.BlockSize())
				}
				st.lvlDots[l]++
				if bitsEq(got, want) {
					st.lvlDotsEq[l]++
				} else {
					t.Errorf("%s %s (%s) row %d · activation %d at %s: %g (%#x), reference %g (%#x)", src, c.info.Name,
						c.info.Type, r, j, l, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
			// The _generic order too, where the library exports it.
			if g, ok := genericDots[c.info.Type]; ok {
				nb := c.cols / c.info.Type.BlockSize()
				got, want := g.ours(w, acts[0][j], nb), g.ref(c.o.k)(c.cols, w, acts[1][j])
				st.genDots++
				if bitsEq(got, want) {
					st.genDotsEq++
				} else {
					t.Errorf("%s %s (%s) row %d · activation %d, _generic: %g (%#x), reference %g (%#x)", src,
						c.info.Name, c.info.Type, r, j, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// tapWriter receives a GGUF file stream (synth.Write) and passes the data of
// the selected tensors, at their planned offsets, to their checks, discarding
// everything else.
type tapWriter struct {
	pos  uint64
	segs []tapSeg // sorted by start
	cur  int
}

type tapSeg struct {
	start, end uint64
	w          io.Writer
}

func (tw *tapWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		for tw.cur < len(tw.segs) && tw.segs[tw.cur].end <= tw.pos {
			tw.cur++
		}
		if tw.cur == len(tw.segs) {
			tw.pos += uint64(len(p))
			break
		}
		s := tw.segs[tw.cur]
		if tw.pos < s.start {
			skip := min(uint64(len(p)), s.start-tw.pos)
			tw.pos += skip
			p = p[skip:]
			continue
		}
		take := min(uint64(len(p)), s.end-tw.pos)
		s.w.Write(p[:take])
		tw.pos += take
		p = p[take:]
	}
	return n, nil
}

// sweepSynth streams a synthetic qwen3 model of shape preset with every
// weight of type typ and checks the tensors keep selects.
func (o *tensorOracle) sweepSynth(t *testing.T, s *sweep, preset string, typ gguf.GGMLType, keep func(name string) bool) {
	t.Helper()
	shape, err := synth.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: typ, Embd: typ, Output: typ, Seed: 4}
	kvs, infos, err := synth.Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gguf.NewWriter(io.Discard, kvs, infos)
	if err != nil {
		t.Fatal(err)
	}
	tw := &tapWriter{}
	var checks []*tensorCheck
	for _, ti := range gw.Tensors() {
		if !keep(ti.Name) {
			continue
		}
		c := newTensorCheck(o, ti)
		checks = append(checks, c)
		start := gw.DataOffset() + ti.Offset
		tw.segs = append(tw.segs, tapSeg{start, start + ti.Size, c})
	}
	slices.SortFunc(tw.segs, func(a, b tapSeg) int { return cmp.Compare(a.start, b.start) })
	if err := synth.Write(tw, cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		c.finish(t, s, preset)
	}
}

// sweepFile checks every tensor of one GGUF file.
func (o *tensorOracle) sweepFile(t *testing.T, s *sweep, path, rel string) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, ti := range f.Tensors {
		m := quant.Matrix{Name: ti.Name, Type: ti.Type, Cols: int(ti.Ne[0]), Rows: int(ti.NElements() / ti.Ne[0]), Data: f.TensorData(&ti)}
		if err := m.Supported(); err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		c := newTensorCheck(o, ti)
		c.Write(f.TensorData(&ti))
		c.finish(t, s, rel)
	}
}

// layerSelector keeps token_embd and every tensor of layers 0 and last.
func layerSelector(last int) func(string) bool {
	l0, ll := "blk.0.", fmt.Sprintf("blk.%d.", last)
	return func(name string) bool {
		return name == "token_embd.weight" || strings.HasPrefix(name, l0) || strings.HasPrefix(name, ll)
	}
}

// TestTensorsMatchReference is the tensor oracle: the shared models, then
// synthetic models of every type synth writes (tiny: every tensor; bonsai-8b:
// token_embd and all of layers 0 and 35 for the Bonsai types Q1_0, Q2_0,
// TQ1_0, TQ2_0). With BANKML_ORACLE_FULL=1 it adds bonsai-1.7b (every tensor)
// and bonsai-8b for every type.
func TestTensorsMatchReference(t *testing.T) {
	o := newTensorOracle(t)
	o.loadRealActivations(t)
	full := os.Getenv(envOracleFull) != ""

	t.Run("activations", func(t *testing.T) { o.checkActivationQuantizers(t) })

	t.Run("models", func(t *testing.T) {
		start := time.Now()
		dir := testdata.ModelsDir(t)
		s := newSweep("shared models (" + dir + ")")
		files := 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".gguf") {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			o.sweepFile(t, s, path, rel)
			files++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		s.name = fmt.Sprintf("%d files in %s", files, dir)
		s.report(t, time.Since(start))
	})

	presets := []struct {
		name  string
		types []gguf.GGMLType
		keep  func(string) bool
	}{
		{"tiny", synth.Types(), func(string) bool { return true }},
		{"bonsai-8b", []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0, gguf.TQ1_0, gguf.TQ2_0}, layerSelector(35)},
	}
	if full {
		presets[1].types = synth.Types()
		presets = append(presets[:1], append([]struct {
			name  string
			types []gguf.GGMLType
			keep  func(string) bool
		}{{"bonsai-1.7b", synth.Types(), func(string) bool { return true }}}, presets[1:]...)...)
	}
	for _, p := range presets {
		t.Run(p.name, func(t *testing.T) {
			if p.name != "tiny" && testing.Short() {
				t.Skip("-short: synthetic tiny only")
			}
			start := time.Now()
			what := "every tensor"
			if p.name == "bonsai-8b" {
				what = "token_embd, blk.0.*, blk.35.*"
			}
			s := newSweep(fmt.Sprintf("synthetic %s (%s)", p.name, what))
			for _, ty := range p.types {
				o.sweepSynth(t, s, p.name, ty, p.keep)
			}
			s.report(t, time.Since(start))
		})
	}
	t.Logf("activation quantizations checked (dot inputs): %d, all byte-equal", o.actChk)
}

// checkActivationQuantizers compares QuantizeRowQ8_0, QuantizeRowQ8_1 and
// QuantizeRowQ8_K with the haswell quantize_row_q8_0/_q8_1/_q8_K on random
// rows, rows with outliers, all-zero rows, extreme finite rows and the real
// activations of stories260K (each traced tensor's values concatenated and
// cut to a multiple of the block).
func (o *tensorOracle) checkActivationQuantizers(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 8))
	type row struct {
		kind string
		x    []float32
	}
	var rows []row
	for _, n := range []int{256, 512, 2048, 4096, 12288} {
		rows = append(rows, row{"random", randRow(r, n)})
		out := randRow(r, n)
		for range n / 32 {
			out[r.IntN(n)] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(8))))
		}
		rows = append(rows, row{"outliers", out})
		rows = append(rows, row{"zero", make([]float32, n)})
		ext := make([]float32, n)
		for i := range ext {
			switch r.IntN(6) {
			case 0:
				ext[i] = math.MaxFloat32
			case 1:
				ext[i] = -math.MaxFloat32
			case 2:
				ext[i] = math.SmallestNonzeroFloat32 * float32(r.IntN(1000))
			case 3:
				ext[i] = float32(r.NormFloat64() * 1e30)
			case 4:
				ext[i] = float32(r.NormFloat64() * 1e-30)
			default:
				ext[i] = float32(math.Copysign(0, -1))
			}
		}
		rows = append(rows, row{"extremes", ext})
		// Blocks each holding only tiny (subnormal-range) values.
		tiny := make([]float32, n)
		for i := range tiny {
			tiny[i] = float32(r.NormFloat64() * 1e-40)
		}
		rows = append(rows, row{"subnormal", tiny})
	}
	real := o.real[:len(o.real)/quant.QK_K*quant.QK_K]
	rows = append(rows, row{"real", real})
	for off := 0; off+4096 <= len(o.real); off += len(o.real) / 8 {
		rows = append(rows, row{"real-window", o.realWindow(off, 4096)})
	}
	formats := []struct {
		name string
		a    actFormat
	}{{"Q8_0", actQ8_0}, {"Q8_1", actQ8_1}, {"Q8_K", actQ8_K}}
	for _, f := range formats {
		nRows, nBlocks, eq := 0, 0, 0
		for _, rw := range rows {
			x := rw.x[:len(rw.x)/f.a.block*f.a.block]
			ours, ref := make([]byte, len(x)/f.a.block*f.a.size), make([]byte, len(x)/f.a.block*f.a.size)
			f.a.quantize(x, ours)
			o.refActQuant(f.a)(x, ref)
			nRows++
			nBlocks += len(x) / f.a.block
			if bytes.Equal(ours, ref) {
				eq++
			} else {
				i := 0
				for ours[i] == ref[i] {
					i++
				}
				t.Errorf("%s %s row of %d values: byte %d (block %d) %#02x, reference %#02x", f.name, rw.kind,
					len(x), i, i/f.a.size, ours[i], ref[i])
			}
		}
		t.Logf("%s: %d/%d activation rows (%d blocks; %d real values from stories260K) byte-equal",
			f.name, eq, nRows, nBlocks, len(real))
	}
}
