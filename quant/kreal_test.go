package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
)

// kRealTensor is one F32 or F16 tensor of a shared model, widened to f32
// and taken flat (ggml's quantizers and converters treat a tensor as
// rows*cols consecutive values).
type kRealTensor struct {
	name   string
	values []float32
}

// kRealTensors reads every F32/F16 tensor of the models whose element count
// is a multiple of 256.
func kRealTensors(t *testing.T, models ...string) []kRealTensor {
	t.Helper()
	var out []kRealTensor
	for _, m := range models {
		f, err := gguf.Open(testdata.Model(t, m))
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			n := int(ti.NElements())
			if n%QK_K != 0 || (ti.Type != gguf.F32 && ti.Type != gguf.F16) {
				continue
			}
			data := f.TensorData(ti)
			v := make([]float32, n)
			for j := range v {
				if ti.Type == gguf.F32 {
					v[j] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*j:]))
				} else {
					v[j] = FP16ToFP32(binary.LittleEndian.Uint16(data[2*j:]))
				}
			}
			out = append(out, kRealTensor{m + ":" + ti.Name, v})
		}
		f.Close()
	}
	return out
}

// TestKQuantsRealTensors: every F32/F16 tensor of stories260K (trained) and
// llama-2-tiny-random quantizes with each format's reference quantizer to
// the reference's bytes and dequantizes to its bits (sha256 per tensor);
// three rows per tensor dot four real activation rows (token embeddings of
// stories260K, quantized to Q8_K — also checked against the reference)
// bit-equal to the haswell kernel and its _generic.
func TestKQuantsRealTensors(t *testing.T) {
	k := kquantKernels(t)
	tensors := kRealTensors(t, "stories260K.gguf", "llama-2-tiny-random.gguf")
	if len(tensors) == 0 {
		t.Fatal("no tensor with a multiple of 256 elements")
	}
	// Real activations: stories260K's token embeddings, the first layer's
	// input, flattened.
	var emb []float32
	for _, tn := range tensors {
		if tn.name == "stories260K.gguf:token_embd.weight" {
			emb = tn.values
		}
	}
	if emb == nil {
		t.Fatal("stories260K token_embd.weight not found")
	}
	const nb = 4
	const actRows = 4
	acts := make([][]byte, actRows)
	for j := range acts {
		x := emb[(j*len(emb)/actRows)/QK_K*QK_K:][:nb*QK_K]
		acts[j] = make([]byte, nb*BlockQ8_KSize)
		want := make([]byte, nb*BlockQ8_KSize)
		QuantizeRowQ8_K(x, acts[j])
		k.QuantizeRowQ8_K(x, want)
		if string(acts[j]) != string(want) {
			t.Fatalf("Q8_K: real activation row %d differs from quantize_row_q8_K", j)
		}
	}
	// Q8_K over whole real tensors too.
	q8rows := 0
	for _, tn := range tensors {
		got := make([]byte, len(tn.values)/QK_K*BlockQ8_KSize)
		want := make([]byte, len(got))
		QuantizeRowQ8_K(tn.values, got)
		k.QuantizeRowQ8_K(tn.values, want)
		if sha256.Sum256(got) != sha256.Sum256(want) {
			t.Fatalf("Q8_K: %s quantizes differently", tn.name)
		}
		q8rows += len(tn.values) / QK_K
	}
	t.Logf("Q8_K: %d tensors (%d blocks) and %d/%d real activation rows quantize to the reference's bytes", len(tensors), q8rows, actRows, actRows)

	for _, f := range kFormats {
		t.Run(f.name, func(t *testing.T) {
			refQ, refDQ, refDot, refGen := f.refQuantize(k), f.refDequant(k), f.refDot(k), f.refGeneric(k)
			weights, dots := 0, 0
			for _, tn := range tensors {
				n := len(tn.values)
				got := make([]byte, n/QK_K*f.blockSize)
				want := make([]byte, len(got))
				f.quantize(tn.values, got)
				refQ(tn.values, want)
				if sha256.Sum256(got) != sha256.Sum256(want) {
					t.Fatalf("%s: quantize_row_%s_ref differs", tn.name, f.typ)
				}
				yg, yw := make([]float32, n), make([]float32, n)
				f.dequant(got, yg)
				refDQ(got, yw)
				if sha256.Sum256(kF32Bytes(yg)) != sha256.Sum256(kF32Bytes(yw)) {
					t.Fatalf("%s: dequantize_row_%s differs", tn.name, f.typ)
				}
				weights += n
				rb := nb * f.blockSize
				nrows := len(got) / rb
				if nrows == 0 {
					continue
				}
				for _, ri := range []int{0, nrows / 2, nrows - 1} {
					w := got[ri*rb : (ri+1)*rb]
					for _, a := range acts {
						if g, r := f.dot(w, a, nb), refDot(nb*QK_K, w, a); !bitsEq(g, r) {
							t.Fatalf("%s row %d: vec_dot %g, reference %g", tn.name, ri, g, r)
						}
						if g, r := f.generic(w, a, nb), refGen(nb*QK_K, w, a); !bitsEq(g, r) {
							t.Fatalf("%s row %d: _generic %g, reference %g", tn.name, ri, g, r)
						}
						dots++
					}
				}
			}
			t.Logf("%s: %d tensors, %d weights quantize and dequantize identically; %d/%d real dots (and %d/%d _generic)", f.name, len(tensors), weights, dots, dots, dots, dots)
		})
	}
}

func kF32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
